//! The hub-wide duties: what one replica, the holder of the leader Lease, does for the
//! whole hub (the PlanValues sweep), and what each replica sweeps on the edges it holds
//! (objects of Workspaces gone from the hub).

pub mod orphan_sweep;
pub mod values_sweep;
