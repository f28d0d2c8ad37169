//! The .deb that scripts/package.sh builds with Tauri's bundler (and
//! scripts/test.sh builds before cargo test): what it holds, that its
//! Depends are real packages this machine's apt can satisfy, and that it
//! installs with dpkg into a fresh root where `mcpool --version` runs from
//! PATH, and removes cleanly. The fresh root (`dpkg --root`) leaves this
//! machine's own packages alone.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use mcpool_tests::*;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn arch() -> String {
    stdout(&run(Command::new("dpkg").arg("--print-architecture")))
        .trim()
        .to_string()
}

/// The package under test: $MCPOOL_TEST_DEB, else where scripts/package.sh puts it.
fn deb() -> PathBuf {
    let path = std::env::var_os("MCPOOL_TEST_DEB")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(format!("target/release/bundle/deb/mcpool_{VERSION}_{}.deb", arch())));
    assert!(
        path.is_file(),
        "no .deb at {}: build it with `bash scripts/package.sh deb` (scripts/test.sh does, before cargo test)",
        path.display()
    );
    path
}

fn field(deb: &Path, name: &str) -> String {
    stdout(&run(Command::new("dpkg-deb").arg("--field").arg(deb).arg(name)))
        .trim()
        .to_string()
}

/// The package names in a Depends field (versions and alternatives dropped
/// down to the first choice).
fn depends(field: &str) -> Vec<String> {
    field
        .split(',')
        .filter_map(|d| d.split('|').next())
        .map(|d| d.split('(').next().unwrap_or(d).trim().to_string())
        .filter(|d| !d.is_empty())
        .collect()
}

#[test]
fn deb_holds_both_binaries_the_menu_entry_and_icons() {
    let deb = deb();
    assert_eq!(field(&deb, "Package"), "mcpool");
    assert_eq!(field(&deb, "Version"), VERSION);
    assert_eq!(field(&deb, "Architecture"), arch());
    let deps = depends(&field(&deb, "Depends"));
    for want in ["libwebkit2gtk-4.1-0", "libgtk-3-0", "libayatana-appindicator3-1"] {
        assert!(deps.iter().any(|d| d == want), "Depends lacks {want}: {deps:?}");
    }

    let listing = stdout(&run(Command::new("dpkg-deb").arg("--contents").arg(&deb)));
    eprintln!("{listing}");
    // Paths as dpkg-deb lists them, with or without a leading "./".
    let path_of = |l: &str| {
        l.split_whitespace()
            .nth(5)
            .map(|p| p.trim_start_matches("./").to_string())
    };
    let paths: Vec<String> = listing.lines().filter_map(path_of).collect();
    for want in [
        "usr/bin/mcpool",
        "usr/bin/mcpool-app",
        "usr/share/applications/mcpool.desktop",
        "usr/share/icons/hicolor/32x32/apps/mcpool-app.png",
        "usr/share/icons/hicolor/128x128/apps/mcpool-app.png",
        "usr/share/icons/hicolor/512x512/apps/mcpool-app.png",
    ] {
        assert!(paths.iter().any(|p| p == want), "{want} not in the .deb:\n{listing}");
    }
    for bin in ["usr/bin/mcpool", "usr/bin/mcpool-app"] {
        let line = listing
            .lines()
            .find(|l| path_of(l).as_deref() == Some(bin))
            .expect("listed");
        assert!(
            line.starts_with("-rwxr-xr-x 0/0 "),
            "{bin} is an executable owned by root: {line}"
        );
    }

    // The menu entry runs the app from PATH with the packaged icon, and
    // passes the freedesktop validator.
    let dir = TempDir::new("deb-contents");
    run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(dir.path()));
    let entry_path = dir.path().join("usr/share/applications/mcpool.desktop");
    let entry = std::fs::read_to_string(&entry_path).expect("menu entry");
    eprintln!("{entry}");
    for line in ["Name=mcpool", "Exec=mcpool-app", "Icon=mcpool-app", "Type=Application"] {
        assert!(entry.lines().any(|l| l == line), "{line:?} in\n{entry}");
    }
    assert!(
        entry
            .lines()
            .any(|l| l.starts_with("Categories=") && l.contains("Development;")),
        "a Development category:\n{entry}"
    );
    let check = Command::new("desktop-file-validate")
        .arg(&entry_path)
        .output()
        .expect("desktop-file-validate (Debian package desktop-file-utils; scripts/test-env.sh installs it)");
    assert!(
        check.status.success() && !String::from_utf8_lossy(&check.stdout).contains("error:"),
        "desktop-file-validate: {}{}",
        stdout(&check),
        String::from_utf8_lossy(&check.stderr)
    );
    // The packed binaries are the ones built from this tree, without the
    // release profile's debug info (a package five times the size).
    let out = run(Command::new(dir.path().join("usr/bin/mcpool")).arg("--version"));
    assert_eq!(stdout(&out), format!("mcpool {VERSION}\n"));
    for bin in ["usr/bin/mcpool", "usr/bin/mcpool-app"] {
        let sections = stdout(&run(Command::new("readelf")
            .args(["--section-headers", "--wide"])
            .arg(dir.path().join(bin))));
        assert!(sections.contains(".text"), "{bin}: {sections}");
        for debug in [".debug_info", ".debug_line"] {
            assert!(
                !sections.contains(debug),
                "{bin} carries debug info ({debug}):\n{sections}"
            );
        }
    }
}

/// apt resolves the Depends against this machine's packages: every name is
/// a real package here, and installing would need nothing more than apt
/// can find (a simulation: nothing changes).
#[test]
fn deb_dependencies_resolve_with_apt() {
    let deb = deb();
    let out = run(Command::new("apt-get")
        .args(["install", "--simulate", "--no-install-recommends", "-q"])
        .arg(&deb)
        .env("DEBIAN_FRONTEND", "noninteractive"));
    let text = stdout(&out);
    eprintln!("{text}");
    assert!(
        text.lines().any(|l| l.starts_with("Inst mcpool ")),
        "apt would install mcpool:\n{text}"
    );
    for dep in depends(&field(&deb, "Depends")) {
        let known = Command::new("apt-cache")
            .args(["show", "--no-all-versions", &dep])
            .output()
            .expect("apt-cache");
        assert!(known.status.success(), "Depends names {dep:?}, which apt does not know");
    }
}

#[test]
fn deb_installs_into_a_fresh_root_and_mcpool_runs_from_path() {
    let deb = deb();
    let dir = TempDir::new("deb-root");
    let root = dir.path().join("root");
    let admin = root.join("var/lib/dpkg");
    for sub in ["info", "updates", "triggers"] {
        std::fs::create_dir_all(admin.join(sub)).expect("dpkg admin dir");
    }
    for file in ["status", "available"] {
        std::fs::write(admin.join(file), "").expect("dpkg database");
    }
    let dpkg = |args: &[&str]| {
        let mut cmd = Command::new("dpkg");
        cmd.arg(format!("--root={}", root.display()))
            .arg(format!("--log={}", dir.path().join("dpkg.log").display()))
            // The fresh root has no libc or GTK packages of its own: the
            // binaries run with this machine's (whose apt resolves the
            // Depends, see deb_dependencies_resolve_with_apt).
            .arg("--force-depends")
            .arg("--force-not-root")
            .args(args);
        cmd
    };

    run(dpkg(&["--install"]).arg(&deb));
    let status = stdout(&run(Command::new("dpkg-query")
        .arg(format!("--admindir={}", admin.display()))
        .args(["--show", "--showformat=${Status} ${Version}", "mcpool"])));
    assert_eq!(status, format!("install ok installed {VERSION}"));

    // By name from PATH: the root's /usr/bin first, then nothing else that
    // could hold an mcpool.
    let path = format!("{}:/bin", root.join("usr/bin").display());
    let out = run(Command::new("sh")
        .args([
            "-c",
            "command -v mcpool && mcpool --version && command -v mcpool-app && mcpool-app --version",
        ])
        .env("PATH", &path));
    assert_eq!(
        stdout(&out),
        format!(
            "{0}/mcpool\nmcpool {VERSION}\n{0}/mcpool-app\nmcpool-app {VERSION}\n",
            root.join("usr/bin").display()
        )
    );

    run(&mut dpkg(&["--remove", "mcpool"]));
    for gone in [
        "usr/bin/mcpool",
        "usr/bin/mcpool-app",
        "usr/share/applications/mcpool.desktop",
    ] {
        assert!(!root.join(gone).exists(), "{gone} left after dpkg --remove");
    }
}
