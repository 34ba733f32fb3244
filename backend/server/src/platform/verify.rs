//! What makes a release trusted: `SHA256SUMS` signed with minisign by a key this binary trusts
//! (the baked one), the signature's trusted comment naming the version, every file matching
//! its line, and `release.json` (listed there) giving the unpacked binary's own digest.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use minisign_verify::{PublicKey, Signature};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The checksum list, its signature and the release's manifest.
pub const SUMS_FILE: &str = "SHA256SUMS";
pub const SIGNATURE_FILE: &str = "SHA256SUMS.minisig";
pub const MANIFEST_FILE: &str = "release.json";
/// The unpacked binary in a release folder.
pub const BINARY_FILE: &str = "mobius";

/// Largest checksum list, signature or manifest read.
pub const MAX_SMALL_FILE_BYTES: u64 = 64 * 1024;

/// A release's manifest (`release.json`), covered by the signed checksums.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReleaseManifest {
    pub format: u32,
    pub version: String,
    #[serde(default)]
    pub build_sha: String,
    #[serde(default)]
    pub published_at: String,
    /// What the image must hold for this binary (see [`super::IMAGE_KEY`]).
    pub image_key: String,
    /// Per architecture (`x86_64`, `aarch64`): the compressed asset and the unpacked binary.
    pub binaries: BTreeMap<String, BinaryAsset>,
    /// The PWA and skills bundle (`frontend/dist/`, `skill/` in a gzipped tar).
    pub pwa: Asset,
    #[serde(default)]
    pub notes: String,
}

/// One architecture's binary: its asset (gzip) and the digest and size once unpacked.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct BinaryAsset {
    pub asset: String,
    pub sha256: String,
    pub bytes: u64,
}

/// A file of the release.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Asset {
    pub asset: String,
}

pub use crate::config::updates::parse_key;

/// The checked lines of a `SHA256SUMS` file: asset name → hex digest.
#[derive(Clone, Debug, Default)]
pub struct Sums(BTreeMap<String, String>);

impl Sums {
    /// Parses `<64 hex>  <name>` lines (a `*` before the name is allowed); names are plain
    /// file names.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut sums = BTreeMap::new();
        for line in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
            let (digest, name) = line.split_once(' ').ok_or_else(|| format!("bad line in {SUMS_FILE}: {line:?}"))?;
            let name = name.trim_start().trim_start_matches('*');
            let plain = !name.is_empty()
                && name.len() <= 128
                && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
                && !name.starts_with('.');
            if digest.len() != 64 || !digest.chars().all(|c| c.is_ascii_hexdigit()) || !plain {
                return Err(format!("bad line in {SUMS_FILE}: {line:?}"));
            }
            sums.insert(name.to_owned(), digest.to_ascii_lowercase());
        }
        if sums.is_empty() {
            return Err(format!("{SUMS_FILE} lists nothing"));
        }
        Ok(Self(sums))
    }

    /// The digest listed for `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// Checks `bytes` against the line for `name`.
    pub fn check_bytes(&self, name: &str, bytes: &[u8]) -> Result<(), String> {
        self.check_digest(name, &hex::encode(Sha256::digest(bytes)))
    }

    /// Checks a digest against the line for `name`.
    pub fn check_digest(&self, name: &str, digest: &str) -> Result<(), String> {
        match self.get(name) {
            Some(want) if want == digest => Ok(()),
            Some(_) => Err(format!("{name} does not match its checksum")),
            None => Err(format!("{SUMS_FILE} does not list {name}")),
        }
    }
}

/// Verifies `sums` against `signature` with one of `keys`; the signature's trusted comment
/// must name `mobius <version>`. Returns the parsed checksums.
pub fn verify_sums(sums: &[u8], signature: &str, keys: &[PublicKey], version: &str) -> Result<Sums, String> {
    let signature = Signature::decode(signature).map_err(|e| format!("the signature is unreadable: {e}"))?;
    if !keys.iter().any(|key| key.verify(sums, &signature, false).is_ok()) {
        return Err("the signature does not match a trusted release key".into());
    }
    let expected = format!("mobius {version}");
    if !signature.trusted_comment().split(['\t', ';']).any(|part| part.trim() == expected) {
        return Err(format!("the signature is for another release, not {expected}"));
    }
    let text = std::str::from_utf8(sums).map_err(|_| format!("{SUMS_FILE} is not text"))?;
    Sums::parse(text)
}

/// Reads a small file (at most [`MAX_SMALL_FILE_BYTES`]).
pub fn read_small(path: &Path) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_SMALL_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_SMALL_FILE_BYTES {
        return Err(format!("{} is larger than {} KiB", path.display(), MAX_SMALL_FILE_BYTES >> 10));
    }
    Ok(bytes)
}

/// The SHA-256 of a file, hex, read in chunks.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The architecture name releases use for this build (`x86_64`, `aarch64`).
pub fn this_arch() -> &'static str {
    std::env::consts::ARCH
}

/// Checks a release folder as the launcher does before running it: the signed checksums,
/// the manifest they list (for `version`), and the unpacked binary's digest.
pub fn verify_release_dir(dir: &Path, keys: &[PublicKey], version: &str) -> Result<ReleaseManifest, String> {
    let sums = read_small(&dir.join(SUMS_FILE))?;
    let signature = String::from_utf8(read_small(&dir.join(SIGNATURE_FILE))?)
        .map_err(|_| format!("{SIGNATURE_FILE} is not text"))?;
    let sums = verify_sums(&sums, &signature, keys, version)?;
    let manifest_bytes = read_small(&dir.join(MANIFEST_FILE))?;
    sums.check_bytes(MANIFEST_FILE, &manifest_bytes)?;
    let manifest = parse_manifest(&manifest_bytes, version)?;
    let binary =
        manifest.binaries.get(this_arch()).ok_or_else(|| format!("the release has no binary for {}", this_arch()))?;
    let digest = sha256_file(&dir.join(BINARY_FILE)).map_err(|e| format!("cannot read the release's binary: {e}"))?;
    if digest != binary.sha256 {
        return Err("the release's binary does not match its signed digest".into());
    }
    Ok(manifest)
}

/// Parses a manifest and checks it is for `version`.
pub fn parse_manifest(bytes: &[u8], version: &str) -> Result<ReleaseManifest, String> {
    let manifest: ReleaseManifest =
        serde_json::from_slice(bytes).map_err(|e| format!("{MANIFEST_FILE} is not a release manifest: {e}"))?;
    if manifest.format != 1 {
        return Err(format!("{MANIFEST_FILE} has format {}; this build reads format 1", manifest.format));
    }
    if manifest.version != version {
        return Err(format!("{MANIFEST_FILE} is for {}, not {version}", manifest.version));
    }
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_baked_key_parses() {
        assert!(parse_key(super::super::RELEASE_PUBLIC_KEY).is_ok());
        assert!(parse_key("untrusted comment: x\nnot base64!").is_err());
        assert!(parse_key("").is_err());
    }

    #[test]
    fn checksum_lines_must_be_digests_and_plain_names() {
        let good = format!("{}  mobius-x86_64-linux.gz\n{} *release.json\n", "a".repeat(64), "B".repeat(64));
        let sums = Sums::parse(&good).expect("parse");
        assert_eq!(sums.get("release.json"), Some("b".repeat(64).as_str()));
        assert!(sums.check_digest("release.json", &"b".repeat(64)).is_ok());
        assert!(sums.check_digest("release.json", &"c".repeat(64)).is_err());
        assert!(sums.check_digest("other", &"b".repeat(64)).is_err());
        for bad in [
            format!("{}  ../mobius", "a".repeat(64)),
            format!("{}  .hidden", "a".repeat(64)),
            format!("{}  a/b", "a".repeat(64)),
            "abc  mobius".to_owned(),
            String::new(),
        ] {
            assert!(Sums::parse(&bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_signature_that_does_not_parse_is_refused() {
        let keys = vec![parse_key(super::super::RELEASE_PUBLIC_KEY).expect("key")];
        let err = verify_sums(b"x", "garbage", &keys, "1.0.0").expect_err("garbage");
        assert!(err.contains("unreadable"), "{err}");
    }
}
