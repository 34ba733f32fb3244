//! Bakes the build identity shown by `/api/version` into the binary.

fn main() {
    for key in ["MOBIUS_BUILD_SHA", "MOBIUS_BUILD_DATE"] {
        println!("cargo:rerun-if-env-changed={key}");
        let value = std::env::var(key).ok().filter(|v| !v.trim().is_empty()).unwrap_or_else(|| "dev".into());
        println!("cargo:rustc-env={key}={value}");
    }
}
