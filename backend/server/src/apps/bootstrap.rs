//! The frame bootstrap: `app-frame.js` from the built PWA, inlined into every frame document
//! (`serve.rs`), read once per process and held in the shared state.

/// `app-frame.js` from the built PWA, inlined into every frame document, and a short hash of
/// it that versions frame URLs. Read once per process (rebuilding the PWA means restarting).
#[derive(Debug)]
pub struct FrameBootstrap {
    pub code: Option<String>,
    pub key: String,
}

impl FrameBootstrap {
    /// Reads `app-frame.js` from `frontend_dir` (absent or unsafe to inline: no code).
    pub fn load(frontend_dir: &std::path::Path) -> Self {
        use sha2::{Digest, Sha256};
        let code = std::fs::read_to_string(frontend_dir.join("app-frame.js"))
            .ok()
            .filter(|code| !code.to_ascii_lowercase().contains("</script"));
        let mut hash = Sha256::new();
        hash.update(crate::ops::BUILD_SHA.as_bytes());
        hash.update(code.as_deref().unwrap_or_default().as_bytes());
        Self { code, key: hex::encode(hash.finalize())[..12].to_owned() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bootstrap_that_could_close_its_script_element_is_not_inlined() {
        let dir = tempfile::tempdir().expect("tmp");
        let safe = FrameBootstrap::load(dir.path());
        assert!(safe.code.is_none(), "no file, nothing to inline");
        std::fs::write(dir.path().join("app-frame.js"), "x = '</SCRIPT>';").expect("write");
        let unsafe_one = FrameBootstrap::load(dir.path());
        assert!(unsafe_one.code.is_none());
        std::fs::write(dir.path().join("app-frame.js"), "window.boot = 1;").expect("write");
        let inlined = FrameBootstrap::load(dir.path());
        assert_eq!(inlined.code.as_deref(), Some("window.boot = 1;"));
        assert_ne!(inlined.key, safe.key, "another bootstrap, another frame URL");
    }
}
