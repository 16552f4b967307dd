//! `kubectl provider`: install and inspect sealed provider Workspaces.
#![forbid(unsafe_code)]

fn main() {
    println!("kubectl-provider {}", env!("CARGO_PKG_VERSION"));
}
