//! Test support: the errors the Kubernetes client gives, built as an API server's answers
//! make them.

/// The error of a request the API server answered with HTTP `code` (a refusal).
pub fn answered(code: u16) -> kube::Error {
    kube::Error::Api(
        kube::core::Status {
            code,
            message: "refused".into(),
            ..Default::default()
        }
        .boxed(),
    )
}
