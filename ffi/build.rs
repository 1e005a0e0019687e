//! Gives the shared library the name it is installed under, so that
//! programs linked with `-ltripwire` look for `libtripwire.so.0` at run time.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libtripwire.so.0");
    }
}
