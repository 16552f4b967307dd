//! What is generated from the API types and checked in: the CustomResourceDefinitions, the
//! ValidatingAdmissionPolicy of the values' bounds, and the API reference. Kept out of the
//! pure core, which decides; this only renders.
#![forbid(unsafe_code)]

pub mod crd;
pub mod policy;
pub mod reference;
