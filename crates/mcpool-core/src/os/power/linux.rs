//! Linux: logind's sleep signal on the system bus, and rtnetlink.

mod logind;
mod netlink;

use crate::os::power::{watcher, PowerWatcher};

pub fn watchers() -> Vec<Box<dyn PowerWatcher>> {
    vec![watcher("logind", logind::run), watcher("netlink", netlink::run)]
}
