//! The OS keyring's names, per platform, for what mcpool says of it (the
//! keyring itself is `secrets.rs`'s, through the `keyring` crate, whose
//! stores are Secret Service on Linux, the login Keychain on macOS and the
//! Credential Manager on Windows). Pure data of [`Platform`], so the
//! Linux tests check every platform's words.

use super::paths::Platform;

/// How `mcpool doctor` names this platform's store and what it tells the
/// person to do when it does not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyringWords {
    /// Put after "the OS keyring": empty, or ` (the …)`.
    pub store: &'static str,
    /// When the store answers reads but refuses the first write.
    pub refused_hint: &'static str,
    /// When the store does not answer at all.
    pub unreachable_hint: &'static str,
}

/// `platform`'s words.
pub fn words(platform: Platform) -> KeyringWords {
    match platform {
        Platform::Linux => KeyringWords {
            store: "",
            refused_hint: "unlock the keyring (or restart its Secret Service); mcpool's first start must store its token there",
            unreachable_hint: "start and unlock a Secret Service (gnome-keyring or KWallet) in this session",
        },
        Platform::MacOs => KeyringWords {
            store: " (the login Keychain)",
            refused_hint: "unlock the login keychain (Keychain Access) and allow mcpool when macOS asks; mcpool's first start must store its token there",
            unreachable_hint: "the login Keychain answers for a signed-in user: sign in at the Mac itself (an SSH session may have no keychain), or see `mcpool doctor --bundle`",
        },
        Platform::Windows => KeyringWords {
            store: " (the Windows Credential Manager)",
            refused_hint: "unlock the keyring (or restart its Secret Service); mcpool's first start must store its token there",
            unreachable_hint: "the Windows Credential Manager should always answer for a signed-in user: sign in again, or see `mcpool doctor --bundle`",
        },
    }
}

/// This platform's words.
pub fn this_platform() -> KeyringWords {
    words(Platform::CURRENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_platform_names_its_own_store() {
        assert_eq!(words(Platform::Linux).store, "");
        assert!(words(Platform::MacOs).store.contains("Keychain"));
        assert!(words(Platform::Windows).store.contains("Credential Manager"));
        assert!(words(Platform::Linux).unreachable_hint.contains("Secret Service"));
        for platform in [Platform::MacOs, Platform::Windows] {
            assert!(
                !words(platform).unreachable_hint.contains("Secret Service"),
                "{platform:?}"
            );
        }
        assert!(!words(Platform::MacOs).refused_hint.contains("Secret Service"));
    }
}
