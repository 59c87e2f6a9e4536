//! `bridle keys`: list, add and revoke the API keys of the key file while the server runs.
//! A running `bridle serve` notices the changed file and puts it in force without a restart,
//! so rotating a key is `keys add` for the same user, handing out the new key, then
//! `keys revoke` of the old one.
//!
//! A user id is 1 to 64 characters of `A-Z a-z 0-9 . _ @ -`; no user key may be for `admin`
//! (see `bridle_server::auth`). `add` and `revoke` change the file under its lock, so that
//! concurrent changes do not undo each other.

use crate::Outcome;
use crate::config_file::{self, Overrides};
use anyhow::{Context as _, Result, bail};
use bridle_server::auth::{self, Role, StoredKey};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct KeysArgs {
    /// The server's data dir (its key file is `api-keys.json` there).
    #[arg(long, value_name = "DIR", env = "BRIDLE_DATA_DIR", global = true)]
    data_dir: Option<PathBuf>,
    /// The server's bridle.toml (for `[server] key_file`).
    #[arg(long, value_name = "FILE", env = "BRIDLE_CONFIG", global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    action: KeysAction,
}

#[derive(Debug, Subcommand)]
enum KeysAction {
    /// List the keys: id (start of the key's hash), role, user.
    List,
    /// Make a new key, store its hash and print the key (shown only this once).
    Add {
        /// The user the key acts for: 1-64 characters of A-Z a-z 0-9 . _ @ - (`admin` only for
        /// admin keys).
        #[arg(long)]
        user: String,
        /// Make an admin key.
        #[arg(long)]
        admin: bool,
    },
    /// Revoke keys: by id (at least 6 hex digits of the hash, as `list` shows) or all of a user's.
    Revoke {
        /// The key's id.
        #[arg(required_unless_present = "user", conflicts_with = "user")]
        id: Option<String>,
        /// Revoke every key of this user.
        #[arg(long)]
        user: Option<String>,
    },
}

pub fn run(args: KeysArgs) -> Result<Outcome> {
    let overrides = Overrides {
        data_dir: args.data_dir.as_deref(),
        ..Overrides::default()
    };
    let loaded = config_file::load(args.config.as_deref(), &overrides).context("configuration")?;
    let file = loaded
        .server
        .key_file
        .unwrap_or_else(|| loaded.config.data_dir.join("api-keys.json"));
    match args.action {
        KeysAction::List => list(&file)?,
        KeysAction::Add { user, admin } => add(&file, user.trim(), admin)?,
        KeysAction::Revoke { id, user } => {
            let _lock = auth::lock_file(&file)?;
            let mut entries = auth::read_file(&file)?;
            let before = entries.len();
            match (&id, &user) {
                (Some(id), _) => {
                    let id = id.trim().to_ascii_lowercase();
                    if id.len() < 6 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
                        bail!("a key id is at least 6 hex digits, as `bridle keys list` shows");
                    }
                    let matching = entries.iter().filter(|e| e.sha256.starts_with(&id)).count();
                    if matching > 1 {
                        bail!("{matching} keys start with {id}; give more digits");
                    }
                    entries.retain(|e| !e.sha256.starts_with(&id));
                }
                (None, Some(user)) => entries.retain(|e| e.user_id != *user),
                (None, None) => bail!("name a key id or --user"),
            }
            let revoked = before - entries.len();
            if revoked == 0 {
                bail!("no key matched in {}", file.display());
            }
            auth::write_file(&file, &entries)
                .with_context(|| format!("writing {}", file.display()))?;
            eprintln!("revoked {revoked} key(s); {} left", entries.len());
        }
    }
    Ok(Outcome::Met)
}

/// `keys list`: a table, entries the server skips marked so.
fn list(file: &Path) -> Result<()> {
    let entries = auth::read_file(file)?;
    let mut table = format!("{:<12}  {:<5}  user\n", "id", "role");
    for entry in &entries {
        let role = match entry.role {
            Role::Admin => "admin",
            Role::User => "user",
        };
        let skipped = match auth::check_user_id(entry.role, &entry.user_id) {
            Ok(()) => String::new(),
            Err(error) => format!("  (not accepted: {error})"),
        };
        table.push_str(&format!(
            "{:<12}  {role:<5}  {}{skipped}\n",
            entry.id(),
            entry.user_id.escape_debug()
        ));
    }
    crate::out::print(table)?;
    eprintln!("{} key(s) in {}", entries.len(), file.display());
    Ok(())
}

/// `keys add`: a new key for `user`, printed once. Should the key not reach standard output
/// (a closed pipe), it is taken out of the file again: nobody could use it.
fn add(file: &Path, user: &str, admin: bool) -> Result<()> {
    let role = if admin { Role::Admin } else { Role::User };
    auth::check_user_id(role, user)?;
    let _lock = auth::lock_file(file)?;
    let mut entries = auth::read_file(file)?;
    let key = auth::generate_key();
    let entry = StoredKey::new(role, user, &key);
    let id = entry.id().to_owned();
    entries.push(entry);
    auth::write_file(file, &entries)?;
    if let Err(error) = crate::out::print_required(format_args!("{key}\n")) {
        entries.pop();
        auth::write_file(file, &entries)?;
        bail!("the new key could not be printed ({error}); it was not added");
    }
    eprintln!(
        "added key {id} for {user} to {} (shown only now; a running server takes it within seconds)",
        file.display()
    );
    Ok(())
}
