//! mcpool's tray app: runs the same pool and endpoint as `mcpool serve`
//! in-process and wires them to a tray icon, its menu, desktop
//! notifications and the dashboard window. What the tray shows is decided
//! by `mcpool-tray`; this file only renders it and performs the clicks.

// A tray app, not a console program: on Windows no console window opens
// with it. What it would have printed goes to the stderr it was given (a
// terminal's or a pipe's), and a fatal error with nowhere to go is shown
// in a message box (`say_fatal`).
#![cfg_attr(windows, windows_subsystem = "windows")]

mod notices;
mod os;
mod render;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use mcpool_core::control::Control;
use mcpool_core::endpoint::browser::BrowserAuth;
use mcpool_core::lifecycle::Status;
use mcpool_core::pool::Pool;
use mcpool_core::service::{self, ServeArgs, Service};
use mcpool_core::supervisor::ToolState;
use mcpool_tray::{Action, Notifier};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, RunEvent, WebviewUrl, WebviewWindowBuilder};
use tauri_plugin_autostart::ManagerExt as _;
use tauri_plugin_clipboard_manager::ClipboardExt;

const TRAY_ID: &str = "mcpool";
const WINDOW_LABEL: &str = "dashboard";
/// The tray looks at the pool this often even without a status event (a
/// server's tool list can grow without one); it changes only what differs.
const REFRESH: Duration = Duration::from_secs(2);

/// What every click handler needs.
struct Shared {
    pool: Pool,
    /// The pool's operations, called in this process as the dashboard's API
    /// calls them.
    control: Control,
    /// Issues the window's one-time dashboard links.
    dashboard: Arc<BrowserAuth>,
    local_addr: SocketAddr,
    endpoint_url: String,
    /// Taken once, at quit.
    service: Mutex<Option<Service>>,
}

/// mcpool's tray app: the pool and endpoint of `mcpool serve` (same config,
/// flags and environment), with a tray icon, its menu, desktop notifications
/// and the dashboard window.
#[derive(clap::Parser)]
#[command(name = "mcpool-app", version)]
struct Cli {
    #[command(flatten)]
    serve: ServeArgs,
    /// Open the dashboard window at launch.
    #[arg(long)]
    dashboard: bool,
    /// Seconds a dropped server gets to come back before the tray says it
    /// is down.
    #[arg(long, env = "MCPOOL_DOWN_NOTICE_SECS", value_name = "SECS")]
    down_notice_secs: Option<u64>,
}

fn main() -> ExitCode {
    let cli = <Cli as clap::Parser>::parse();
    mcpool_core::os::process::start_guardian(); // first, before any thread: it forks
    mcpool_core::log::init();
    if let Some(why) = os::no_display() {
        say_fatal(&format!("mcpool: {why}; the tray app needs a desktop session. Run `mcpool serve` for the same pool and endpoint without one."));
        return ExitCode::from(2);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            say_fatal(&format!("mcpool: {e:#}"));
            ExitCode::FAILURE
        }
    }
}

/// A sentence that ends the app: on stderr, and where the app has no
/// stderr (on Windows, started from the Start menu, the Run key or
/// Explorer) also where the person sees it (a message box), so it does not
/// end without a word.
fn say_fatal(sentence: &str) {
    eprintln!("{sentence}");
    os::show_fatal(sentence);
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let Cli {
        serve,
        dashboard,
        down_notice_secs,
    } = cli;
    let down_grace = down_notice_secs
        .map(Duration::from_secs)
        .unwrap_or(mcpool_tray::notify::DOWN_GRACE);
    // Refused before anything starts, as `mcpool serve` refuses it.
    serve.check_listen()?;

    // Single instance first: a second launch hands over to the running one
    // (which shows its window) and exits 0 inside `build`, before it starts
    // a pool of its own.
    let app = tauri::Builder::default()
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            tracing::info!("another launch: showing the dashboard");
            // Only once this instance's own setup has started the pool.
            if app.try_state::<Arc<Shared>>().is_some() {
                perform(app, Action::OpenDashboard);
            }
        }))
        .plugin(tauri_plugin_autostart::Builder::new().build())
        .plugin(tauri_plugin_clipboard_manager::init())
        .setup(move |app| {
            let shared = match start_service(serve.clone()) {
                Ok(shared) => shared,
                Err(e) => {
                    // Said plainly, not as the panic Tauri makes of a failed
                    // setup; nothing runs yet (service::start fails before
                    // its first server starts).
                    say_fatal(&format!("mcpool: {e:#}")); // `:#`: the whole cause chain
                    std::process::exit(1);
                }
            };
            app.manage(shared.clone());
            let handle = app.handle().clone();
            let snapshot = shared.pool.snapshot();
            let menu = mcpool_tray::menu(&snapshot, &shared.endpoint_url);
            TrayIconBuilder::with_id(TRAY_ID)
                .icon(render::icon(mcpool_tray::icon(&snapshot))?)
                .tooltip(mcpool_tray::tooltip(&snapshot))
                .menu(&render::menu(&handle, &menu)?)
                .show_menu_on_left_click(true)
                .on_menu_event(|app, event| {
                    if event.id().as_ref() == render::OPEN_AT_LOGIN {
                        toggle_open_at_login(app);
                    } else if let Some(action) = Action::parse(event.id().as_ref()) {
                        perform(app, action);
                    }
                })
                .build(app)?;
            tauri::async_runtime::spawn(follow_status(handle.clone(), shared.clone(), menu, down_grace));
            tauri::async_runtime::spawn(quit_on_signal(handle.clone(), shared.clone()));
            // `--dashboard` opens the window at launch, as the menu item does.
            if dashboard {
                perform(&handle, Action::OpenDashboard);
            }
            Ok(())
        })
        .build(tauri::generate_context!())
        .context("cannot start the tray app")?;

    app.run(|_app, event| {
        // Closing the window closes it for real, so WebKit's processes and
        // their memory go with it (docs/benchmarks.md), but the tray and the
        // pool keep running: only Quit (an exit with a code) ends the app.
        if let RunEvent::ExitRequested { code: None, api, .. } = event {
            api.prevent_exit();
        }
    });
    Ok(())
}

/// Starts the pool and its endpoint, as `mcpool serve` does.
fn start_service(serve: ServeArgs) -> anyhow::Result<Arc<Shared>> {
    let service = tauri::async_runtime::block_on(async {
        let (token, warning) = service::token_or_create(&serve.setup).await?;
        if let Some(w) = warning {
            eprintln!("mcpool: warning: {w}");
        }
        anyhow::Ok(service::start(serve.options(token)?).await?)
    })?;
    println!("mcpool listening on {}", service.endpoint_url());
    Ok(Arc::new(Shared {
        pool: service.pool.clone(),
        control: service.control.clone(),
        dashboard: service.dashboard.clone(),
        local_addr: service.local_addr,
        endpoint_url: service.endpoint_url(),
        service: Mutex::new(Some(service)),
    }))
}

/// "Open at login": flips the login item (on Linux a .desktop file in
/// ~/.config/autostart) and shows the outcome in the menu.
fn toggle_open_at_login(app: &AppHandle) {
    let launcher = app.autolaunch();
    let result = match launcher.is_enabled() {
        Ok(true) => launcher.disable(),
        Ok(false) => launcher.enable(),
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => tracing::info!("open at login: {}", launcher.is_enabled().unwrap_or(false)),
        Err(e) => tracing::warn!("cannot change \"Open at login\": {e}"),
    }
    // The native check mark flipped on the click; rebuild so it shows the truth.
    let shared = app.state::<Arc<Shared>>().inner().clone();
    let menu = mcpool_tray::menu(&shared.pool.snapshot(), &shared.endpoint_url);
    if let (Some(tray), Ok(native)) = (app.tray_by_id(TRAY_ID), render::menu(app, &menu)) {
        let _ = tray.set_menu(Some(native));
    }
}

/// Keeps the tray in step with the pool and sends the notifications the
/// policy asks for. The menu is rebuilt only when its value changes.
async fn follow_status(app: AppHandle, shared: Arc<Shared>, mut shown: mcpool_tray::Menu, down_grace: Duration) {
    let mut events = shared.pool.subscribe();
    let mut held_events = shared.pool.subscribe_held();
    let mut notifier = Notifier::with_down_grace(down_grace);
    let first = shared.pool.snapshot();
    // Tools held back for approval before the tray was up are told of too.
    let held_at_start: Vec<(String, Vec<String>, Vec<String>)> = first
        .iter()
        .map(|s| {
            let names = |state| {
                let tools = s.tools.iter().filter(move |t| t.state == state);
                tools.map(|t| t.name.clone()).collect::<Vec<_>>()
            };
            let quarantined = names(ToolState::Quarantined);
            let mut held = names(ToolState::Changed);
            held.extend(quarantined.iter().cloned());
            (s.name.clone(), held, quarantined)
        })
        .collect();
    let mut shown_icon = mcpool_tray::icon(&first);
    let mut shown_tooltip = mcpool_tray::tooltip(&first);
    let mut last: BTreeMap<String, Status> = first.into_iter().map(|s| (s.name, s.status)).collect();
    // Servers that asked for sign-in before the tray was up are told of too.
    let start = Instant::now();
    for (name, status) in &last {
        notices::show(&app, notifier.on_status(name, Status::Pending, *status, start));
    }
    for (name, held, quarantined) in held_at_start.iter().filter(|(_, held, _)| !held.is_empty()) {
        notifier.note_quarantined(name, quarantined);
        notices::show(&app, notifier.on_tools_held(name, held, start));
    }
    let mut tick = tokio::time::interval(REFRESH);
    loop {
        let deadline = notifier.next_deadline();
        let wake = async move {
            match deadline {
                Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = events.recv() => match event {
                Ok(e) => {
                    let old = last.insert(e.server.clone(), e.status).unwrap_or(Status::Pending);
                    notices::show(&app, notifier.on_status(&e.server, old, e.status, Instant::now()));
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            event = held_events.recv() => match event {
                Ok(e) => {
                    notifier.note_quarantined(&e.server, &e.quarantined);
                    notices::show(&app, notifier.on_tools_held(&e.server, &e.held, Instant::now()));
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            _ = wake => notices::show(&app, notifier.poll(Instant::now())),
            _ = tick.tick() => {}
        }
        let snapshot = shared.pool.snapshot();
        let menu = mcpool_tray::menu(&snapshot, &shared.endpoint_url);
        let icon = mcpool_tray::icon(&snapshot);
        let tooltip = mcpool_tray::tooltip(&snapshot);
        let rebuild = (menu != shown).then(|| menu.clone());
        shown = menu;
        // Each new icon is a new file and a D-Bus signal: only on change.
        let new_icon = (icon != shown_icon).then_some(icon);
        shown_icon = icon;
        let new_tooltip = (tooltip != shown_tooltip).then(|| tooltip.clone());
        shown_tooltip = tooltip;
        if rebuild.is_none() && new_icon.is_none() && new_tooltip.is_none() {
            continue;
        }
        let handle = app.clone();
        let _ = app.run_on_main_thread(move || {
            let Some(tray) = handle.tray_by_id(TRAY_ID) else { return };
            if let Some(menu) = rebuild {
                match render::menu(&handle, &menu) {
                    Ok(m) => {
                        let _ = tray.set_menu(Some(m));
                    }
                    Err(e) => tracing::warn!("cannot build the tray menu: {e}"),
                }
            }
            if let Some(image) = new_icon.and_then(|i| render::icon(i).ok()) {
                let _ = tray.set_icon(Some(image));
            }
            if let Some(text) = new_tooltip {
                let _ = tray.set_tooltip(Some(text));
            }
        });
    }
}

fn perform(app: &AppHandle, action: Action) {
    let shared = app.state::<Arc<Shared>>().inner().clone();
    match action {
        Action::Reconnect(name) | Action::Enable(name) => {
            tauri::async_runtime::spawn(async move {
                if let Err(e) = shared.control.reconnect(&name).await {
                    tracing::info!("reconnect {name}: {e}");
                }
            });
        }
        Action::Disconnect(name) => {
            if let Err(e) = shared.control.disconnect(&name) {
                tracing::info!("disconnect {name}: {e}");
            }
        }
        Action::ReconnectAllFailed => {
            let control = shared.control.clone();
            tauri::async_runtime::spawn(async move { control.reconnect_failed() });
        }
        Action::SignIn(name) => sign_in(app, name),
        Action::SignOut(name) => {
            tauri::async_runtime::spawn(async move {
                if let Err(e) = shared.control.sign_out(&name).await {
                    tracing::warn!("cannot sign out of {name}: {e}");
                }
            });
        }
        Action::OpenDashboard => open_dashboard(app, None),
        Action::CopyEndpointUrl => {
            if let Err(e) = app.clipboard().write_text(shared.endpoint_url.clone()) {
                tracing::warn!("cannot copy to the clipboard: {e}");
            }
        }
        Action::Quit => {
            tauri::async_runtime::spawn(quit(app.clone(), shared));
        }
    }
}

/// Shows the dashboard window (signed in afresh), scrolled to `server`'s
/// card when one is given.
pub(crate) fn open_dashboard(app: &AppHandle, server: Option<String>) {
    let shared = app.state::<Arc<Shared>>().inner().clone();
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        match dashboard_link(&shared, server.as_deref()) {
            Ok(url) => {
                let handle = app.clone();
                let _ = app.run_on_main_thread(move || {
                    let shown = match os::no_webview() {
                        Some(why) => Err(why),
                        None => show_dashboard(&handle, url.clone(), server.as_deref()).map_err(|e| e.to_string()),
                    };
                    if let Err(why) = shown {
                        // No window can be made here: the same dashboard,
                        // signed in by the same link, in the user's browser.
                        tracing::warn!("cannot open the dashboard window ({why}): opening it in the browser");
                        if let Err(e) = mcpool_core::os::opener::open_url(url.as_str()) {
                            tracing::error!("cannot open the dashboard in the browser either: {e}");
                        }
                    }
                });
            }
            Err(e) => tracing::error!("cannot open the dashboard: {e:#}"),
        }
    });
}

/// Starts signing `server` in and opens the browser at its sign-in page
/// (`BROWSER` if set, else the desktop's). The pool owns the redirect
/// listener and the tokens; the server connects once the browser comes
/// back.
/// If no page can be opened, the dashboard opens at that server instead.
pub(crate) fn sign_in(app: &AppHandle, server: String) {
    let shared = app.state::<Arc<Shared>>().inner().clone();
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let opened = match shared.control.sign_in(&server).await {
            Ok(url) => mcpool_core::os::opener::open_url(&url).map_err(anyhow::Error::from),
            Err(e) => Err(anyhow::Error::from(e)),
        };
        if let Err(e) = opened {
            tracing::warn!("cannot start signing in to {server}: {e:#}");
            open_dashboard(&app, Some(server));
        }
    });
}

/// Stops every server (and child process) in order, then ends the app with
/// 0. The first caller does both; a second (Quit clicked during a SIGTERM)
/// finds the service taken and leaves the exit to the first, so the
/// shutdown is never cut short.
async fn quit(app: AppHandle, shared: Arc<Shared>) {
    let Some(service) = shared.service.lock().ok().and_then(|mut s| s.take()) else {
        return;
    };
    tracing::info!("stopping");
    service.shutdown().await;
    app.exit(0);
}

/// SIGTERM (a session logout, `systemctl --user stop`, `kill`) and SIGINT
/// (Ctrl-C in a terminal) end the app as Quit does, so no child server is
/// left behind without its parent.
async fn quit_on_signal(app: AppHandle, shared: Arc<Shared>) {
    if let Err(e) = service::stop_requested().await {
        tracing::warn!("cannot watch for SIGTERM/SIGINT: {e}");
        return;
    }
    quit(app, shared).await;
}

/// A one-time sign-in link for the window, as `mcpool ui` gets one: the
/// window then holds a dashboard session cookie. The dashboard reads
/// `#server=NAME` and shows that server's card.
fn dashboard_link(shared: &Shared, server: Option<&str>) -> anyhow::Result<tauri::Url> {
    let base = format!("http://{}", shared.local_addr);
    let path = shared.dashboard.issue_link_path();
    let mut url: tauri::Url = format!("{base}{path}").parse()?;
    if let Some(name) = server {
        let fragment: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("server", name)
            .finish();
        url.set_fragment(Some(&fragment));
    }
    Ok(url)
}

fn show_dashboard(app: &AppHandle, url: tauri::Url, server: Option<&str>) -> tauri::Result<()> {
    let title = match server {
        Some(name) => format!("mcpool — {name}"),
        None => "mcpool".to_string(),
    };
    if let Some(window) = app.get_webview_window(WINDOW_LABEL) {
        window.navigate(url)?;
        window.set_title(&title)?;
        window.show()?;
        return window.set_focus();
    }
    WebviewWindowBuilder::new(app, WINDOW_LABEL, WebviewUrl::External(url))
        .title(&title)
        .inner_size(960.0, 680.0)
        // The dashboard's "Sign in" opens the server's sign-in page with
        // window.open: that belongs in the user's browser, where their
        // accounts are, not in a window of ours.
        .on_new_window(|url, _| {
            if matches!(url.scheme(), "http" | "https") {
                if let Err(e) = mcpool_core::os::opener::open_url(url.as_str()) {
                    tracing::warn!("cannot open the browser: {e}");
                }
            }
            tauri::webview::NewWindowResponse::Deny
        })
        .build()?;
    Ok(())
}
