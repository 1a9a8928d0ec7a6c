//! The repository's own tasks, run as `cargo xtask TASK` (an alias in
//! `.cargo/config.toml`):
//!
//! - `cargo xtask test [ARGS..]`: the README's test command. Installs what the test
//!   suite needs, then runs its tiers (`tiers.rs`: the offline tier, which is plain
//!   `cargo test --workspace`, then the services tier, which the `services` feature
//!   adds), each with `--no-fail-fast` and `ARGS..`, and prints one summary of every
//!   test binary: passed, failed and ignored per tier, and each failed binary with the
//!   command that reruns it.
//! - `cargo xtask setup`: only the installation (then run single tests with `cargo test`).
//! - `cargo xtask public-items [--list | --check | --bless]`: brute's public items,
//!   counted per module from rustdoc's JSON (`--list` prints every path; `--check`
//!   compares them with the reviewed list `xtask/public-items.txt` and fails on any
//!   difference, as CI does; `--bless` writes the list); see `public_items.rs`.
//!
//! The installation is idempotent (each step checks first and does nothing when its
//! tool is there) and puts what it can into folders of the repository, which git
//! ignores: the OpenAI Python client and schemathesis into `.ci/venv`, the npm MCP test
//! server, the AG-UI client, the MCP conformance suite and Node 22 (which the suite needs) into
//! `.ci/npm`. What only Debian packages provide (PostgreSQL, Chromium and chromedriver,
//! Node.js and npm, Python's venv module) it installs with `apt-get`, as root, only
//! when missing. Tests never install anything: a test whose service is missing fails
//! and names this command.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

mod json;
mod public_items;
mod tiers;

/// The npm package of the MCP tests and of `examples/mcp_tools.rs`, pinned.
const MCP_SERVER: &str = "@modelcontextprotocol/server-everything@2026.8.31";
/// Where that package's entry point lands, below the repository.
const MCP_SERVER_ENTRY: &str =
    ".ci/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
/// The contract fuzzer of brute-serve's OpenAPI test (PyPI), pinned.
const SCHEMATHESIS: &str = "schemathesis==4.32.5";
/// The official AG-UI client of brute-serve's AG-UI test, pinned.
const AGUI_CLIENT: &str = "@ag-ui/client@1.0.0";
/// Where that package's manifest lands, below the repository (the test checks it).
const AGUI_CLIENT_MANIFEST: &str = ".ci/npm/node_modules/@ag-ui/client/package.json";
/// The official MCP conformance suite and the Node it needs (22 or newer; Debian's is
/// older), run by brute-mcp's `tests/mcp_services/conformance.rs`, pinned.
const MCP_CONFORMANCE: [&str; 2] = ["@modelcontextprotocol/conformance@0.1.16", "node@22.23.3"];
/// Where the suite's entry point and that Node land, below the repository (the test checks them).
const MCP_CONFORMANCE_FILES: [&str; 2] = [
    ".ci/npm/node_modules/@modelcontextprotocol/conformance/dist/index.js",
    ".ci/npm/node_modules/node/bin/node",
];

/// What the command line asked for.
#[derive(Debug, PartialEq)]
enum Task {
    /// Install what the tests need.
    Setup,
    /// Install, then run every tier of the tests with these extra arguments.
    Test(Vec<String>),
    /// Count brute's public items, list them, or hold them to the reviewed list.
    PublicItems(public_items::Mode),
    /// Print the usage.
    Help,
}

/// Why a task failed.
#[derive(Debug)]
enum XtaskError {
    /// The command line named no known task.
    Usage(String),
    /// A program could not be started at all.
    Spawn { program: String, error: io::Error },
    /// A program ran and failed.
    Failed { command: String, status: String },
    /// A Debian package is missing and only root may install it.
    NotRoot { packages: Vec<&'static str> },
    /// A step ran but what it should have installed is still not there.
    StillMissing { what: String },
    /// rustdoc's JSON could not be read.
    Rustdoc(String),
    /// The reviewed list of public items could not be read or written.
    List { path: PathBuf, error: io::Error },
    /// brute's public items differ from the reviewed list.
    Unreviewed { path: PathBuf, diff: String },
}

impl fmt::Display for XtaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XtaskError::Usage(arg) => write!(f, "unknown task `{arg}`\n\n{USAGE}"),
            XtaskError::Spawn { program, error } => write!(f, "cannot run `{program}`: {error}"),
            XtaskError::Failed { command, status } => write!(f, "`{command}` failed ({status})"),
            XtaskError::NotRoot { packages } => write!(
                f,
                "Debian's {} missing and this is not root: run `cargo xtask setup` as root, \
                 or `apt-get install {}` yourself",
                packages.join(", "),
                packages.join(" ")
            ),
            XtaskError::StillMissing { what } => {
                write!(f, "{what} is still missing after installing it")
            }
            XtaskError::Rustdoc(what) => write!(f, "{what}"),
            XtaskError::List { path, error } => write!(f, "{}: {error}", path.display()),
            XtaskError::Unreviewed { path, diff } => write!(
                f,
                "brute's public items differ from the reviewed list {} \
                 (`-` listed but gone, `+` new and not listed):\n{diff}\n\
                 A public item is a promise to users: if the change is meant, \
                 run `cargo xtask public-items --bless` and commit the list with it",
                path.display()
            ),
        }
    }
}

const USAGE: &str =
    "usage: cargo xtask test [ARGS..]   install what the tests need, then run the offline and the
                                    services tier (`cargo test --workspace ARGS..`, then with
                                    `--features services`), and print one summary
       cargo xtask setup            only install what the tests need
       cargo xtask public-items [--list]  count brute's public items per module (rustdoc JSON)
       cargo xtask public-items --check   fail if they differ from xtask/public-items.txt
       cargo xtask public-items --bless   write that list (a reviewed change)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = parse(&args).and_then(|task| match task {
        Task::Help => {
            println!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        Task::Setup => setup().map(|()| ExitCode::SUCCESS),
        Task::PublicItems(mode) => public_items(mode).map(|()| ExitCode::SUCCESS),
        Task::Test(extra) => {
            setup()?;
            tiers::run(&extra)
        }
    });
    result.unwrap_or_else(|error| {
        eprintln!("xtask: {error}");
        ExitCode::FAILURE
    })
}

/// The task of a command line (the arguments after `cargo xtask`).
fn parse(args: &[String]) -> Result<Task, XtaskError> {
    match args.split_first() {
        None => Ok(Task::Help),
        Some((task, rest)) => match task.as_str() {
            "test" => Ok(Task::Test(rest.to_vec())),
            "setup" if rest.is_empty() => Ok(Task::Setup),
            "public-items" => match rest {
                [] => Ok(Task::PublicItems(public_items::Mode::Count)),
                [flag] if flag == "--list" => Ok(Task::PublicItems(public_items::Mode::List)),
                [flag] if flag == "--check" => Ok(Task::PublicItems(public_items::Mode::Check)),
                [flag] if flag == "--bless" => Ok(Task::PublicItems(public_items::Mode::Bless)),
                _ => Err(XtaskError::Usage(args.join(" "))),
            },
            "help" | "--help" | "-h" => Ok(Task::Help),
            _ => Err(XtaskError::Usage(args.join(" "))),
        },
    }
}

/// The repository's root folder (this crate sits in `xtask/` below it).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask/ has a parent folder")
        .to_path_buf()
}

/// Installs, where missing, everything the test suite needs.
fn setup() -> Result<(), XtaskError> {
    let root = root();
    let mut apt = Apt::default();

    step(
        "PostgreSQL for the session-store tests (Debian's postgresql; the tests start private servers on 127.0.0.1)",
    );
    run(Command::new("bash")
        .arg(root.join(".ci/postgres.sh"))
        .arg("install"))?;

    step("the OpenAI Python client of brute-serve's tests, into .ci/venv");
    let venv = root.join(".ci/venv");
    let python = venv.join("bin/python");
    if !succeeds(Command::new(&python).args(["-c", "import openai"])) {
        remove(&venv)?;
        if on_path("python3").is_none() {
            apt.install(&["python3", "python3-venv"])?;
        }
        if !succeeds(Command::new("python3").arg("-m").arg("venv").arg(&venv)) {
            // Debian's python3 lacks ensurepip until python3-venv is installed.
            remove(&venv)?;
            apt.install(&["python3-venv"])?;
            run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
        }
        run(Command::new(venv.join("bin/pip")).args(["install", "-q", "openai"]))?;
    }
    run(Command::new(&python).args(["-c", "import openai; print('openai', openai.__version__)"]))?;
    step(
        "the A2A Python SDK of brute-serve's A2A tests (a2a-sdk with its HTTP server, uvicorn), into .ci/venv",
    );
    if !succeeds(Command::new(&python).args(["-c", "import a2a.server.routes, uvicorn"])) {
        run(Command::new(venv.join("bin/pip")).args([
            "install",
            "-q",
            "a2a-sdk[http-server]",
            "uvicorn",
        ]))?;
    }
    run(Command::new(&python).args([
        "-c",
        "import a2a.server.routes, uvicorn; print('a2a-sdk and uvicorn')",
    ]))?;
    step(
        "schemathesis, the contract fuzzer of brute-serve's tests/serve/openapi.rs, into .ci/venv",
    );
    let pinned = format!(
        "import schemathesis; assert schemathesis.__version__ == '{}'",
        SCHEMATHESIS.trim_start_matches("schemathesis==")
    );
    if !succeeds(Command::new(&python).args(["-c", &pinned])) {
        run(Command::new(venv.join("bin/pip")).args(["install", "-q", SCHEMATHESIS]))?;
    }
    run(Command::new(venv.join("bin/st")).arg("--version"))?;

    step(
        "Chromium and chromedriver for brute-serve's web chat test (Debian's chromium, chromium-driver)",
    );
    if on_path("chromium").is_none() || on_path("chromedriver").is_none() {
        apt.install(&["chromium", "chromium-driver"])?;
    }
    run(Command::new("chromium").arg("--version"))?;
    run(Command::new("chromedriver").arg("--version"))?;

    step(
        "nginx, the load balancer of brute-serve's scale-out fault runs (Debian's nginx; the tests start private ones on 127.0.0.1)",
    );
    if on_path("nginx").is_none() && !Path::new("/usr/sbin/nginx").is_file() {
        apt.install(&["nginx"])?;
        // The package starts a server of its own on port 80; the tests run private
        // ones, so stop it (it exits 0 only if it was running).
        let _ = succeeds(Command::new("/usr/sbin/nginx").args(["-s", "quit"]));
    }
    run(Command::new("/usr/sbin/nginx").arg("-v"))?;

    step(
        "the MCP test server (npm, into .ci/npm; the brute-mcp tests and examples/mcp_tools start it over stdio)",
    );
    if on_path("npm").is_none() || on_path("node").is_none() {
        apt.install_without_recommends(&["nodejs", "npm"])?;
    }
    if !root.join(MCP_SERVER_ENTRY).is_file() {
        run(Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(root.join(".ci/npm"))
            .arg(MCP_SERVER))?;
    }
    if !root.join(MCP_SERVER_ENTRY).is_file() {
        return Err(XtaskError::StillMissing {
            what: MCP_SERVER_ENTRY.to_string(),
        });
    }
    println!("{MCP_SERVER}");

    step(
        "the AG-UI client (npm, into .ci/npm; brute-serve's tests/serve_services/agui.rs drives it)",
    );
    if !root.join(AGUI_CLIENT_MANIFEST).is_file() {
        run(Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(root.join(".ci/npm"))
            .arg(AGUI_CLIENT))?;
    }
    if !root.join(AGUI_CLIENT_MANIFEST).is_file() {
        return Err(XtaskError::StillMissing {
            what: AGUI_CLIENT_MANIFEST.to_string(),
        });
    }
    println!("{AGUI_CLIENT}");

    step(
        "the MCP conformance suite and Node 22 (npm, into .ci/npm; brute-mcp's tests/mcp_services/conformance.rs runs them)",
    );
    if MCP_CONFORMANCE_FILES
        .iter()
        .any(|f| !root.join(f).is_file())
    {
        run(Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(root.join(".ci/npm"))
            .args(MCP_CONFORMANCE))?;
    }
    if let Some(missing) = MCP_CONFORMANCE_FILES
        .iter()
        .find(|f| !root.join(f).is_file())
    {
        return Err(XtaskError::StillMissing {
            what: missing.to_string(),
        });
    }
    run(Command::new(root.join(MCP_CONFORMANCE_FILES[1])).arg("--version"))?;
    println!("{}", MCP_CONFORMANCE.join(" "));
    Ok(())
}

/// Documents brute as rustdoc JSON (every feature on, as docs.rs) and prints its
/// public items per module, or holds them to the reviewed list.
fn public_items(mode: public_items::Mode) -> Result<(), XtaskError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = root();
    // The JSON output is unstable rustdoc; the pinned stable toolchain accepts it with
    // RUSTC_BOOTSTRAP, for this one command.
    run(Command::new(&cargo)
        .current_dir(&root)
        .env("RUSTC_BOOTSTRAP", "1")
        .args(["rustdoc", "--quiet", "-p", "brute", "--all-features", "--"])
        .args(["-Z", "unstable-options", "--output-format", "json"]))?;
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let surface =
        public_items::read(&target.join("doc/brute.json")).map_err(XtaskError::Rustdoc)?;
    let reviewed = root.join(public_items::REVIEWED);
    let list_error = |error| XtaskError::List {
        path: reviewed.clone(),
        error,
    };
    match mode {
        public_items::Mode::Count => print!("{}", surface.report(false)),
        public_items::Mode::List => print!("{}", surface.report(true)),
        public_items::Mode::Bless => {
            std::fs::write(&reviewed, surface.listing()).map_err(list_error)?;
            println!(
                "{} public items written to {}",
                surface.paths.len(),
                reviewed.display()
            );
        }
        public_items::Mode::Check => {
            let listed = std::fs::read_to_string(&reviewed).map_err(list_error)?;
            let diff = public_items::diff(&listed, &surface.listing());
            if !diff.is_empty() {
                return Err(XtaskError::Unreviewed {
                    path: reviewed,
                    diff,
                });
            }
            println!("{} public items, as reviewed", surface.paths.len());
        }
    }
    Ok(())
}

/// Debian's package manager, updated at most once per run.
#[derive(Default)]
struct Apt {
    updated: bool,
}

impl Apt {
    fn install(&mut self, packages: &[&'static str]) -> Result<(), XtaskError> {
        self.run_install(packages, false)
    }

    fn install_without_recommends(&mut self, packages: &[&'static str]) -> Result<(), XtaskError> {
        self.run_install(packages, true)
    }

    fn run_install(&mut self, packages: &[&'static str], lean: bool) -> Result<(), XtaskError> {
        if !is_root() {
            return Err(XtaskError::NotRoot {
                packages: packages.to_vec(),
            });
        }
        if !self.updated {
            run(Command::new("apt-get")
                .args(["update", "-qq"])
                .env("DEBIAN_FRONTEND", "noninteractive"))?;
            self.updated = true;
        }
        let mut install = Command::new("apt-get");
        install
            .args(["install", "-y", "-qq"])
            .env("DEBIAN_FRONTEND", "noninteractive");
        if lean {
            install.arg("--no-install-recommends");
        }
        run(install.args(packages))
    }
}

/// Whether this process runs as root (`id -u` prints 0).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
}

/// The executable `name` on `PATH`, if there is one.
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|file| {
            file.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Runs `command`, its output going to ours; fails unless it exits with 0.
fn run(command: &mut Command) -> Result<(), XtaskError> {
    let shown = show(command);
    let status = command.status().map_err(|error| XtaskError::Spawn {
        program: command.get_program().to_string_lossy().into_owned(),
        error,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(XtaskError::Failed {
            command: shown,
            status: status.to_string(),
        })
    }
}

/// Whether `command` runs and exits with 0 (its output discarded).
fn succeeds(command: &mut Command) -> bool {
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Removes the folder `dir` if it is there.
fn remove(dir: &Path) -> Result<(), XtaskError> {
    match std::fs::remove_dir_all(dir) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(XtaskError::Spawn {
            program: format!("rm -rf {}", dir.display()),
            error,
        }),
        _ => Ok(()),
    }
}

/// `command` as a shell line, for messages.
fn show(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

fn step(what: &str) {
    println!("\n==> {what}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn test_passes_its_arguments_on_to_cargo_test() {
        assert_eq!(parse(&args("test")).ok(), Some(Task::Test(vec![])));
        assert_eq!(
            parse(&args("test -- --nocapture")).ok(),
            Some(Task::Test(args("-- --nocapture")))
        );
        assert_eq!(parse(&args("setup")).ok(), Some(Task::Setup));
        assert_eq!(parse(&[]).ok(), Some(Task::Help));
    }

    #[test]
    fn an_unknown_task_is_an_error_that_shows_the_usage() {
        let error = parse(&args("tset")).expect_err("not a task");
        assert!(error.to_string().contains("unknown task `tset`"), "{error}");
        assert!(error.to_string().contains("cargo xtask test"), "{error}");
        assert!(parse(&args("setup now")).is_err());
        assert!(parse(&args("public-items --chek")).is_err());
    }

    #[test]
    fn public_items_takes_one_mode() {
        use public_items::Mode;
        for (line, mode) in [
            ("public-items", Mode::Count),
            ("public-items --list", Mode::List),
            ("public-items --check", Mode::Check),
            ("public-items --bless", Mode::Bless),
        ] {
            assert_eq!(
                parse(&args(line)).ok(),
                Some(Task::PublicItems(mode)),
                "{line}"
            );
        }
        assert!(parse(&args("public-items --check --bless")).is_err());
    }

    #[test]
    fn the_mcp_server_entry_is_inside_the_repository() {
        assert!(MCP_SERVER_ENTRY.starts_with(".ci/npm/"));
        assert!(AGUI_CLIENT_MANIFEST.starts_with(".ci/npm/"));
        assert!(
            MCP_CONFORMANCE_FILES
                .iter()
                .all(|f| f.starts_with(".ci/npm/"))
        );
        assert!(root().join("Cargo.toml").is_file());
    }
}
