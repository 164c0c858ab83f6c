//! The shared library's SONAME: `libtenure.so.<ABI version>`, the name programs record and the
//! dynamic loader looks for (README.md, "Installing"). Cargo names the file it builds
//! `libtenure_ffi.so`; bindings/c/install.sh installs it as `libtenure.so.<ABI>.<minor>.<patch>`
//! with the usual `libtenure.so.<ABI>` and `libtenure.so` links.

/// The ABI version; `TENURE_ABI_VERSION` in the header (a test keeps the two equal).
const ABI_VERSION: u32 = 0;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=TENURE_BUILD_ABI_VERSION={ABI_VERSION}");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtenure.so.{ABI_VERSION}");
    }
}
