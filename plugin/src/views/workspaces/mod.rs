//! `status`, `history` and `target`: a Workspace's attempts and where it installs.

mod history;
mod shown;
mod status;
mod target;
#[cfg(test)]
mod tests;

pub use self::{
    history::history,
    status::{status_detail, status_list},
    target::target,
};
pub use shown::name_of;
