//! The test control plane: real `etcd` and `kube-apiserver` processes on 127.0.0.1.
//!
//! [`ControlPlane::launch`] starts one in a folder and owns its processes;
//! the `providers-controlplane` binary wraps it for shells and for tests, and
//! [`Supervised`] runs that binary as a child so a control plane is torn down when the
//! test process ends, however it ends (its stdin closes and it cleans up).
#![forbid(unsafe_code)]

pub mod apimetrics;
pub mod audit;
pub mod balancer;
pub mod bench;
pub mod binaries;
pub mod chartrepo;
pub mod controlplane;
pub mod demo;
pub mod engines;
pub mod fixtures;
pub mod installer;
pub mod job_completer;
pub mod jobrunner;
pub mod kubeconfig;
pub mod kubectl;
pub mod kubelet;
pub mod operations;
pub mod pki;
pub mod platform;
pub mod plugin;
pub mod ports;
pub mod process;
pub mod secret_volume;
pub mod stored_values;
pub mod supervised;
pub mod system;
pub mod tcpproxy;
pub mod users;
pub mod webhook;
pub mod write_load;

pub use controlplane::{ControlPlane, ControlPlaneInfo};
pub use supervised::Supervised;
pub use users::User;
