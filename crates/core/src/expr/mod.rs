//! [`ExprRule`]: a declared rule whose test is an expression (`kind = "expr"`), for what neither
//! the schema nor the three fixed kinds can say — "the end date is after the start date", "the
//! total is the sum of the items", "at most one option is recommended", "this id is one of the
//! application's table rows".
//!
//! ```toml
//! [[rules]]
//! kind = "expr"
//! name = "end-after-start"
//! path = "/bookings/*"                 # a path pattern; "" is the whole reply
//! expr = "this.end > this.start"       # CEL: `this` (the match), `reply`, `context`
//! message = "end {this.end} must come after start {this.start}"
//! ```
//!
//! The expression is evaluated once per match of `path`; `false` is a violation with the
//! rule's name, the match's pointer and the rendered message. An expression that cannot be
//! evaluated at a match — a member it reads is absent, a value has the wrong type — is a
//! violation too (the reply lacks what the rule needs); a path that matches nothing evaluates
//! nothing. The variables: `this`, the matched value; `reply`, the whole reply; `context`, the
//! turn's context — its string facts (`context.page`) and, when the application sent one, its
//! state as JSON (`context.app_state`).
//!
//! # The language: CEL
//!
//! Compared before choosing (November 2026):
//!
//! | | CEL (`cel` 0.15) | Rhai 1.27 | evalexpr 12 |
//! |---|---|---|---|
//! | sandbox | no I/O, no loops, no recursion: macros (`all`, `exists`, `map`, `filter`) only | no I/O with a raw engine; loops, closures and recursion | no I/O; no iteration at all |
//! | bounded on hostile input | not by itself: no cost limit, and macros nest (O(n^k)), strings grow in a `map` | operation count, string/array/map size, call depth; but one operation may clone or compare a 256 KiB value, so an operation limit does not bound time (multi-second worst cases seen) | yes, but cannot say "every item" or "the sum of the items" |
//! | compile errors | line and column | line and position | position |
//! | JSON in/out | serde to its values | serde to `Dynamic` (deep clones) | no nested values |
//! | kept | used by Kubernetes, Envoy, Google IAM; the Rust crate released monthly | one maintainer, active | slow |
//! | build | antlr4rust runtime (~50 s release, ~1 MB) | ~60 s, ~1.5 MB | small |
//!
//! CEL is made for this job (policies over JSON, non-Turing-complete, the same language as
//! Kubernetes validation rules), and its missing cost limit is added here ([`fuel`]): the
//! expression is rewritten at load to pay for every operand and every iteration from a budget
//! of [`STEP_BUDGET`] steps per rule per reply, so the work is linear in the budget whatever the
//! expression or the reply. With the static limits ([`MAX_EXPR_CHARS`], [`MAX_NODES`],
//! [`MAX_DEPTH`]) and at most [`MAX_VIOLATIONS`] violations per rule, a rule's cost on any reply
//! is bounded; the worst cases are in `tests/it/expr_limits.rs`.
//!
//! Functions beside CEL's standard ones: `list.sum()` (ints, or doubles when any is a double).

mod fuel;
pub mod template;

use crate::context::Context;
use crate::pointer::PathPattern;
use crate::report::Violation;
use crate::rule::Rule;
use cel::common::ast::{Expr, IdedExpr, SourceInfo};
use cel::objects::{Key, Map};
use cel::{ExecutionError, Value as Cel};
use serde_json::Value;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use template::Template;

/// The longest expression accepted, in characters.
pub const MAX_EXPR_CHARS: usize = 1000;
/// The most nodes an expression's syntax tree may have (after macros are expanded).
pub const MAX_NODES: usize = 600;
/// The deepest an expression may nest.
pub const MAX_DEPTH: u16 = 8;
/// The deepest the syntax tree may be: evaluation recurses once per level.
pub const MAX_TREE_DEPTH: usize = 24;
/// Steps one rule may take over one reply, all its matches together (see [`fuel`]).
pub const STEP_BUDGET: i64 = 100_000;
/// Violations one rule reports at most per reply; it stops evaluating there.
pub const MAX_VIOLATIONS: usize = 20;
/// The variables an expression may read.
pub(crate) const VARIABLES: [&str; 3] = ["this", "reply", "context"];
/// The functions and methods an expression may call (CEL's standard ones, and `sum`).
const FUNCTIONS: [&str; 13] = [
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "type",
    "dyn",
    "sum",
];
/// Characters of the matched value quoted in a violation.
const FOUND_CHARS: usize = 90;

fn env() -> Arc<cel::Env> {
    static ENV: OnceLock<Arc<cel::Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(cel::Env::stdlib().with_optional_support(false)))
        .clone()
}

/// One expression rule, compiled.
#[derive(Debug, Clone, PartialEq)]
pub struct ExprRule {
    name: String,
    path: PathPattern,
    source: String,
    program: Arc<IdedExpr>,
    message: Option<Template>,
    /// Whether the expression reads `reply` and `context`: a variable it never reads is not
    /// converted for it (the whole reply, as CEL values, costs more than most rules).
    reads: Reads,
}

/// The free variables besides `this` an expression reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Reads {
    reply: bool,
    context: bool,
}

/// What [`vet`] counts and finds while it walks a tree.
#[derive(Debug, Default)]
struct Walk {
    nodes: usize,
    reads: Reads,
}

impl ExprRule {
    /// Compiles a rule; the error names what is wrong and, for the expression, where (line and
    /// column).
    pub fn compile(
        name: &str,
        path: &str,
        expr: &str,
        message: Option<&str>,
    ) -> Result<Self, String> {
        let valid_name = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid_name {
            return Err(format!(
                "expr rule name {name:?} must be 1 to 64 letters, digits, '-', '_' or '.'"
            ));
        }
        let fail = |what: String| format!("expr rule {name:?}: {what}");
        let path = PathPattern::absolute(path).map_err(|e| fail(e.to_string()))?;
        if expr.chars().count() > MAX_EXPR_CHARS {
            return Err(fail(format!(
                "the expression is longer than {MAX_EXPR_CHARS} characters"
            )));
        }
        // The parser recurses per bracket and unary operator: refused before it runs, so that
        // no expression can exhaust the stack.
        nesting(expr).map_err(&fail)?;
        let parser = env().parser().max_recursion_depth(MAX_DEPTH);
        let (tree, info) = parser.parse_with_source_info(expr).map_err(|errors| {
            let first = errors.errors.first();
            fail(match first {
                Some(e) => format!(
                    "the expression does not parse at line {}, column {}: {}",
                    e.pos.0,
                    e.pos.1 + 1,
                    e.msg
                ),
                None => "the expression does not parse".into(),
            })
        })?;
        if tree_depth(&tree, 0) > MAX_TREE_DEPTH {
            return Err(fail(format!(
                "the expression nests more than {MAX_TREE_DEPTH} operations deep; split a long chain of operators into several rules"
            )));
        }
        let mut walk = Walk::default();
        vet(&tree, &mut Vec::new(), &mut walk)
            .map_err(|(id, what)| fail(format!("{what} at {}", position(expr, &info, id))))?;
        if walk.nodes > MAX_NODES {
            return Err(fail(format!(
                "the expression has {} parts; at most {MAX_NODES} are allowed",
                walk.nodes
            )));
        }
        let message = message.map(Template::parse).transpose().map_err(&fail)?;
        Ok(Self {
            name: name.to_owned(),
            path,
            source: expr.to_owned(),
            program: Arc::new(fuel::instrument(tree)),
            message,
            reads: walk.reads,
        })
    }

    /// The rule's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The path pattern whose matches the expression is evaluated at.
    pub fn path(&self) -> &PathPattern {
        &self.path
    }

    /// The rule in one line, for the prompt: its message first (words a model acts on), then
    /// the expression it is checked by.
    pub fn describe(&self) -> String {
        let place = match self.path.as_str() {
            "" => "the whole reply".to_owned(),
            p => format!("each {p}"),
        };
        let check = format!(
            "rule \"{}\": `{}` holds for {place}, `this` being the value there",
            self.name, self.source
        );
        match &self.message {
            Some(message) => format!("{} ({check})", message.source_text()),
            None => check,
        }
    }

    /// Appends a violation for every match of the path where the expression is not true.
    pub fn check(&self, inputs: &ExprInputs<'_>, out: &mut Vec<Violation>) {
        let budget = fuel::Budget::new(STEP_BUDGET);
        let mut root = cel::Context::with_env(env());
        budget.install(&mut root);
        add_sum(&mut root);
        if self.reads.reply {
            root.add_variable_from_value("reply", inputs.reply().clone());
        }
        if self.reads.context {
            root.add_variable_from_value("context", inputs.context_value().clone());
        }
        let mut reported = 0;
        self.path.for_each_match(inputs.value, "", |pointer, matched| {
            if reported >= MAX_VIOLATIONS || budget.is_spent() {
                return;
            }
            let mut scope = root.new_inner_scope();
            // The whole reply is converted once for every rule that reads it.
            let this = if pointer.is_empty() {
                inputs.reply().clone()
            } else {
                to_cel(matched)
            };
            scope.add_variable_from_value("this", this);
            let result = if budget.take(1) {
                Cel::resolve(&self.program, &scope)
            } else {
                Err(ExecutionError::function_error(fuel::FUEL, fuel::SPENT))
            };
            let problem = if budget.is_spent() {
                Some(format!(
                    "rule \"{}\" could not be checked: it needs more than {STEP_BUDGET} steps over this reply; send a smaller reply",
                    self.name
                ))
            } else {
                match result {
                    Ok(Cel::Bool(true)) => None,
                    Ok(Cel::Bool(false)) => Some(self.failed(inputs, matched)),
                    Ok(other) => Some(format!(
                        "rule \"{}\" could not be checked: its expression gave {}, not true or false",
                        self.name,
                        type_name(&other)
                    )),
                    Err(error) => Some(format!(
                        "rule \"{}\" could not be checked here: {} — the reply lacks what the rule `{}` needs",
                        self.name,
                        explain(&error),
                        crate::schema::cut(&self.source, 120)
                    )),
                }
            };
            if let Some(message) = problem {
                reported += 1;
                out.push(
                    Violation::new(pointer, Rule::Expr, message)
                        .with_found(crate::schema::cut(&matched.to_string(), FOUND_CHARS)),
                );
            }
        });
    }

    fn failed(&self, inputs: &ExprInputs<'_>, matched: &Value) -> String {
        let said = match &self.message {
            Some(template) => template.render(|var| match var {
                "this" => Some(matched),
                "reply" => Some(inputs.value),
                "context" => inputs.context_json(),
                _ => None,
            }),
            None => format!("`{}` is false", self.source),
        };
        format!("rule \"{}\" failed: {said}", self.name)
    }
}

/// What expression rules read besides the matched value, converted once per reply.
#[derive(Debug)]
pub struct ExprInputs<'a> {
    value: &'a Value,
    context: &'a Context,
    reply: OnceCell<Cel>,
    context_cel: OnceCell<Cel>,
    context_json: OnceCell<Value>,
}

impl<'a> ExprInputs<'a> {
    /// The inputs of the rules over `value` under `context`.
    pub fn new(value: &'a Value, context: &'a Context) -> Self {
        Self {
            value,
            context,
            reply: OnceCell::new(),
            context_cel: OnceCell::new(),
            context_json: OnceCell::new(),
        }
    }

    /// The checked value.
    pub fn value(&self) -> &'a Value {
        self.value
    }

    fn reply(&self) -> &Cel {
        self.reply.get_or_init(|| to_cel(self.value))
    }

    fn context_json(&self) -> Option<&Value> {
        Some(self.context_json.get_or_init(|| {
            let mut map: serde_json::Map<String, Value> = self
                .context
                .iter()
                .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
                .collect();
            if let Some(state) = self.context.app_state() {
                map.insert("app_state".into(), state.clone());
            }
            Value::Object(map)
        }))
    }

    fn context_value(&self) -> &Cel {
        self.context_cel
            .get_or_init(|| self.context_json().map_or(Cel::Null, to_cel))
    }
}

/// A JSON value as a CEL value: integers as `int` (`uint` above `i64::MAX`), other numbers as
/// `double`.
fn to_cel(value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => Cel::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(members) => {
            let map: HashMap<Key, Cel> = members
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            Cel::Map(Map { map: Arc::new(map) })
        }
    }
}

/// `list.sum()`: the sum of a list of numbers.
fn add_sum(context: &mut cel::Context<'_, '_>) {
    // `sum` is not a standard overload: adding cannot fail.
    let _ = context.add_function(
        "sum",
        |ftx: &cel::FunctionContext,
         cel::extractors::This(list): cel::extractors::This<Arc<Vec<Cel>>>|
         -> Result<Cel, ExecutionError> {
            let mut int: i64 = 0;
            let mut float: Option<f64> = None;
            for item in list.iter() {
                match item {
                    Cel::Int(i) => {
                        int = int
                            .checked_add(*i)
                            .ok_or_else(|| ftx.error("the sum overflows"))?;
                    }
                    Cel::UInt(u) => {
                        let i = i64::try_from(*u).map_err(|_| ftx.error("the sum overflows"))?;
                        int = int
                            .checked_add(i)
                            .ok_or_else(|| ftx.error("the sum overflows"))?;
                    }
                    Cel::Float(f) => *float.get_or_insert(0.0) += f,
                    other => {
                        return Err(
                            ftx.error(format!("sum() needs numbers, found {}", type_name(other)))
                        );
                    }
                }
            }
            Ok(match float {
                Some(f) => Cel::Float(f + int as f64),
                None => Cel::Int(int),
            })
        },
    );
}

fn type_name(value: &Cel) -> &'static str {
    match value {
        Cel::List(_) => "a list",
        Cel::Map(_) => "an object",
        Cel::Int(_) | Cel::UInt(_) => "an integer",
        Cel::Float(_) => "a number",
        Cel::String(_) => "a string",
        Cel::Bytes(_) => "bytes",
        Cel::Bool(_) => "a boolean",
        Cel::Null => "null",
        _ => "a value of another type",
    }
}

/// A runtime error in words, without the values it carries (they may be large).
fn explain(error: &ExecutionError) -> String {
    match error {
        ExecutionError::NoSuchKey(key) => {
            format!("no member \"{}\"", crate::schema::cut(key, 60))
        }
        ExecutionError::UnexpectedType { got, want } => {
            format!("found a {got} where a {want} is needed")
        }
        ExecutionError::ValuesNotComparable(a, b) => {
            format!("{} and {} cannot be compared", type_name(a), type_name(b))
        }
        ExecutionError::UndeclaredReference(name) => {
            format!("\"{}\" is not defined", crate::schema::cut(name, 60))
        }
        ExecutionError::NoSuchOverload(_) | ExecutionError::UnsupportedBinaryOperator(..) => {
            "an operator or function was given values of the wrong type".into()
        }
        ExecutionError::DivisionByZero(_) | ExecutionError::RemainderByZero(_) => {
            "division by zero".into()
        }
        ExecutionError::UnsupportedIndex(..) => "an index that does not fit the list".into(),
        ExecutionError::FunctionError { message, .. } => crate::schema::cut(message, 80),
        _ => "the expression cannot be evaluated on this value".into(),
    }
}

/// Walks the tree: counts nodes, and refuses a name that is not a variable (or a macro's own)
/// and a call of a function outside [`FUNCTIONS`].
fn vet(node: &IdedExpr, bound: &mut Vec<String>, walk: &mut Walk) -> Result<(), (u64, String)> {
    walk.nodes += 1;
    if walk.nodes > MAX_NODES {
        return Ok(());
    }

    match &node.expr {
        Expr::Ident(name) => {
            let shadowed = bound.iter().any(|b| b == name);
            match name.as_str() {
                _ if shadowed => {}
                "reply" => walk.reads.reply = true,
                "context" => walk.reads.context = true,
                known if VARIABLES.contains(&known) => {}
                _ => {
                    return Err((
                        node.id,
                        format!("unknown name \"{name}\" (use this, reply or context)"),
                    ));
                }
            }
        }
        Expr::Call(call) => {
            let name = call.func_name.as_str();
            let operator = name.starts_with('_') || name.starts_with('@') || name.ends_with('_');
            if !operator && !FUNCTIONS.contains(&name) {
                return Err((node.id, format!("unknown function \"{name}\"")));
            }
            if let Some(target) = &call.target {
                vet(target, bound, walk)?;
            }
            for arg in &call.args {
                vet(arg, bound, walk)?;
            }
        }
        Expr::Comprehension(c) => {
            vet(&c.iter_range, bound, walk)?;
            vet(&c.accu_init, bound, walk)?;
            let before = bound.len();
            bound.push(c.iter_var.clone());
            bound.extend(c.iter_var2.clone());
            bound.push(c.accu_var.clone());
            for part in [&c.loop_cond, &c.loop_step, &c.result] {
                vet(part, bound, walk)?;
            }
            bound.truncate(before);
        }
        Expr::Select(select) => vet(&select.operand, bound, walk)?,
        Expr::List(list) => {
            for element in &list.elements {
                vet(element, bound, walk)?;
            }
        }
        Expr::Map(map) => {
            for entry in &map.entries {
                if let cel::common::ast::EntryExpr::MapEntry(e) = &entry.expr {
                    vet(&e.key, bound, walk)?;
                    vet(&e.value, bound, walk)?;
                }
            }
        }
        Expr::Struct(_) => return Err((node.id, "message literals are not supported".into())),
        Expr::Literal(_) | Expr::Unspecified => {}
    }
    Ok(())
}

/// The depth of a tree, counted no further than [`MAX_TREE_DEPTH`] + 1.
fn tree_depth(node: &IdedExpr, at: usize) -> usize {
    if at > MAX_TREE_DEPTH {
        return at;
    }
    let deeper = |n: &IdedExpr| tree_depth(n, at + 1);
    let children: Vec<&IdedExpr> = match &node.expr {
        Expr::Call(call) => call
            .target
            .iter()
            .map(|t| &**t)
            .chain(call.args.iter())
            .collect(),
        Expr::Comprehension(c) => vec![
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ],
        Expr::Select(select) => vec![&*select.operand],
        Expr::List(list) => list.elements.iter().collect(),
        Expr::Map(map) => map
            .entries
            .iter()
            .filter_map(|e| match &e.expr {
                cel::common::ast::EntryExpr::MapEntry(m) => Some(&m.value),
                cel::common::ast::EntryExpr::StructField(_) => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    children.into_iter().map(deeper).max().unwrap_or(at + 1)
}

/// Refuses brackets nested deeper than [`MAX_DEPTH`] and runs of more than four unary
/// operators, outside string literals.
fn nesting(source: &str) -> Result<(), String> {
    let (mut depth, mut unary, mut quote) = (0usize, 0usize, None::<char>);
    let mut chars = source.chars();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == '\\' {
                chars.next();
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > usize::from(MAX_DEPTH) {
            return Err(format!(
                "the expression nests brackets deeper than {MAX_DEPTH} levels"
            ));
        }
        match c {
            '!' | '-' => unary += 1,
            c if c.is_whitespace() => {}
            _ => unary = 0,
        }
        if unary > 4 {
            return Err("the expression has more than four unary operators in a row".into());
        }
    }
    Ok(())
}

/// "line L, column C" of a node (1-based), from its character offset in the source.
fn position(source: &str, info: &SourceInfo, id: u64) -> String {
    let Some((start, _)) = info.offset_for(id) else {
        return "an unknown place".into();
    };
    let before: String = source.chars().take(start as usize).collect();
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}")
}

#[cfg(test)]
mod tests;
