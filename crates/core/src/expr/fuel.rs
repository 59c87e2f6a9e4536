//! The step budget of an expression rule: CEL (the `cel` crate) has no cost limit of its own, so
//! the compiled expression is rewritten once, at load, to pay for its work as it runs.
//!
//! Every operand of a call (an operator such as `+` or `<`, a function, a method's target) and
//! every comprehension's range (what `all`, `exists`, `exists_one`, `map` and `filter` iterate)
//! is wrapped in a call of [`FUEL`] (but for `size` and indexing, which take constant time), which passes the value through and takes its size from the
//! budget: 1 for a scalar, 1 + the length of a list or map, 1 + bytes / 8 of a string. The
//! operands of `==`, `!=` and `in`, which compare whole values, go through [`FUEL_DEEP`], which
//! counts every nested element and byte — but never more than what is left, so the counting
//! itself stays within the budget. The loop condition of `all`, `exists` and `exists_one` pays
//! 1 per element and stops the loop once the budget is spent (CEL absorbs an element's error in
//! these macros and would otherwise go on). No native operation of the remaining language does
//! more than linear work in its operands, so the work of an evaluation is linear in the budget.
//!
//! Literals, names and list literals are not wrapped (list literals' elements are), which keeps
//! the shapes the interpreter optimises (`map`'s and `filter`'s appends, the accumulators of
//! `all` and `exists`).

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, operators};
use cel::{ExecutionError, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// The name of the shallow-cost function (not a CEL identifier: no expression can call it).
pub(crate) const FUEL: &str = "@fuel";
/// The name of the deep-cost function.
pub(crate) const FUEL_DEEP: &str = "@fuel_deep";
/// What [`FUEL`] reports once the budget is spent.
pub(crate) const SPENT: &str = "step budget spent";

/// Rewrites `expr` to pay for its work.
pub(crate) fn instrument(expr: IdedExpr) -> IdedExpr {
    let id = expr.id;
    let expr = match expr.expr {
        Expr::Call(mut call) => {
            let deep = matches!(
                call.func_name.as_str(),
                operators::EQUALS | operators::NOT_EQUALS | operators::IN
            );
            // `size` and indexing take constant time whatever their operand's size.
            let constant = matches!(call.func_name.as_str(), "size" | operators::INDEX);
            let pay = |e: IdedExpr| {
                if constant {
                    instrument(e)
                } else {
                    wrap(e, deep)
                }
            };
            call.args = call.args.into_iter().map(pay).collect();
            call.target = call.target.map(|t| Box::new(pay(*t)));
            Expr::Call(call)
        }
        Expr::Comprehension(c) => {
            let c = *c;
            let loop_cond = match c.loop_cond.expr {
                Expr::Literal(_) => c.loop_cond,
                _ => wrap(c.loop_cond, false),
            };
            Expr::Comprehension(Box::new(ComprehensionExpr {
                iter_range: wrap(c.iter_range, false),
                accu_init: instrument(c.accu_init),
                loop_cond,
                loop_step: instrument(c.loop_step),
                result: instrument(c.result),
                ..c
            }))
        }
        Expr::Select(mut select) => {
            select.operand = Box::new(instrument(*select.operand));
            // A member read pays for what it yields: reading a value out of a variable may
            // convert it.
            if select.test {
                Expr::Select(select)
            } else {
                return wrap_select(IdedExpr {
                    id,
                    expr: Expr::Select(select),
                });
            }
        }
        Expr::List(mut list) => {
            list.elements = list.elements.into_iter().map(instrument).collect();
            Expr::List(list)
        }
        Expr::Map(mut map) => {
            for entry in &mut map.entries {
                if let EntryExpr::MapEntry(e) = &mut entry.expr {
                    e.key = instrument(std::mem::take(&mut e.key));
                    e.value = instrument(std::mem::take(&mut e.value));
                }
            }
            Expr::Map(map)
        }
        other => other,
    };
    IdedExpr { id, expr }
}

fn wrap_select(select: IdedExpr) -> IdedExpr {
    IdedExpr {
        id: select.id,
        expr: Expr::Call(CallExpr {
            func_name: FUEL.to_owned(),
            target: None,
            args: vec![select],
        }),
    }
}

fn wrap(expr: IdedExpr, deep: bool) -> IdedExpr {
    match expr.expr {
        Expr::Literal(_) => expr,
        Expr::Ident(_) if !deep => expr,
        // Already paid for as it is read (see `instrument`), unless it must be paid deep.
        Expr::Select(ref s) if !deep && !s.test => instrument(expr),
        Expr::List(_) => instrument(expr),
        _ => IdedExpr {
            id: expr.id,
            expr: Expr::Call(CallExpr {
                func_name: if deep { FUEL_DEEP } else { FUEL }.to_owned(),
                target: None,
                args: vec![instrument(expr)],
            }),
        },
    }
}

/// The size a value is charged at, shallow.
fn shallow(value: &Value) -> i64 {
    let len = match value {
        Value::List(list) => list.len(),
        Value::Map(map) => map.map.len(),
        Value::String(s) => s.len() / 8,
        Value::Bytes(b) => b.len() / 8,
        _ => 0,
    };
    i64::try_from(len).unwrap_or(i64::MAX).saturating_add(1)
}

/// The size of a value and everything in it, counted up to `cap` at most.
fn deep(value: &Value, cap: i64) -> i64 {
    let mut total = 0i64;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        total = total.saturating_add(shallow(v));
        if total > cap {
            return total;
        }
        match v {
            Value::List(list) => stack.extend(list.iter()),
            Value::Map(map) => stack.extend(map.map.values()),
            _ => {}
        }
    }
    total
}

/// The budget one rule's evaluations share.
#[derive(Debug, Clone)]
pub(crate) struct Budget(Arc<AtomicI64>);

impl Budget {
    pub(crate) fn new(steps: i64) -> Self {
        Self(Arc::new(AtomicI64::new(steps)))
    }

    /// Takes `cost`; false once the budget is spent.
    pub(crate) fn take(&self, cost: i64) -> bool {
        self.0.fetch_sub(cost, Ordering::Relaxed) - cost >= 0
    }

    pub(crate) fn is_spent(&self) -> bool {
        self.0.load(Ordering::Relaxed) < 0
    }

    fn left(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Adds [`FUEL`] and [`FUEL_DEEP`] to a CEL context.
    pub(crate) fn install(&self, context: &mut cel::Context<'_, '_>) {
        let shallow_budget = self.clone();
        let deep_budget = self.clone();
        // The names are not CEL identifiers and no overload has them: adding cannot fail.
        let _ = context.add_function(FUEL, move |v: Value| -> Result<Value, ExecutionError> {
            if shallow_budget.take(shallow(&v)) {
                Ok(v)
            } else {
                Err(ExecutionError::function_error(FUEL, SPENT))
            }
        });
        let _ = context.add_function(
            FUEL_DEEP,
            move |v: Value| -> Result<Value, ExecutionError> {
                let cost = deep(&v, deep_budget.left().max(0));
                if deep_budget.take(cost) {
                    Ok(v)
                } else {
                    Err(ExecutionError::function_error(FUEL, SPENT))
                }
            },
        );
    }
}
