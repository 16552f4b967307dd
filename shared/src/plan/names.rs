//! The namespace and release name a Recipe's templates derive for a Workspace, and the
//! checks a derived name passes.

use super::resolve_error::ResolveError;

/// The namespace a Recipe installs into when it names none: one per organization.
pub const DEFAULT_NAMESPACE: &str = "{org}-{recipe}";
/// The release name a Recipe uses when it names none.
pub const DEFAULT_RELEASE: &str = "{recipe}";

/// What a Recipe's namespace and release templates are filled from.
pub(super) struct Names<'a> {
    pub(super) recipe: &'a str,
    pub(super) org: &'a str,
    pub(super) workspace: &'a str,
}

impl Names<'_> {
    /// `template` with its placeholders replaced, checked as a namespace (a DNS label) or a
    /// Helm release name (at most 53 characters, a DNS subdomain).
    pub(super) fn derive(
        &self,
        what: &'static str,
        template: &str,
    ) -> Result<String, ResolveError> {
        let resolved = template
            .replace("{org}", self.org)
            .replace("{workspace}", self.workspace)
            .replace("{recipe}", self.recipe);
        let why = if resolved.contains(['{', '}']) {
            Some("it names a placeholder other than {org}, {workspace} and {recipe}".to_owned())
        } else if what == "namespace"
            && template.contains("{workspace}")
            && !template.contains("{org}")
        {
            // Workspace names are the tenants' to choose: without the organization in it, a
            // tenant could name a Workspace after another organization's namespace.
            Some("the template names {workspace} without {org}, so a tenant could claim another organization's namespace".to_owned())
        } else if what == "namespace" && is_reserved_namespace(&resolved) {
            Some("the name is reserved for the cluster (default, kube-*, providers-*)".to_owned())
        } else if what == "namespace" {
            dns_label(&resolved, 63).err()
        } else {
            dns_subdomain(&resolved, 53).err()
        };
        match why {
            None => Ok(resolved),
            Some(why) => Err(ResolveError::InvalidName {
                recipe: self.recipe.to_owned(),
                what,
                template: template.to_owned(),
                resolved: crate::text::quoted(&resolved),
                why,
            }),
        }
    }
}

/// Namespaces no Workspace installs into, whatever a template derives: the cluster's own
/// and the platform's.
pub fn is_reserved_namespace(name: &str) -> bool {
    name == "default" || name.starts_with("kube-") || name.starts_with("providers-")
}

/// Whether `name` is a DNS label of at most `max` characters (RFC 1123): what a namespace
/// must be.
pub fn dns_label(name: &str, max: usize) -> Result<(), String> {
    if name.is_empty() || name.len() > max {
        return Err(format!(
            "it must be 1 to {max} characters long, not {}",
            name.len()
        ));
    }
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !name.chars().all(|c| alphanumeric(c) || c == '-') {
        return Err("only lowercase letters, digits and '-' are allowed".to_owned());
    }
    if !name.starts_with(alphanumeric) || !name.ends_with(alphanumeric) {
        return Err("it must start and end with a letter or digit".to_owned());
    }
    Ok(())
}

/// Whether `name` is dot-separated DNS labels, at most `max` characters in all: what a Helm
/// release name must be.
pub fn dns_subdomain(name: &str, max: usize) -> Result<(), String> {
    if name.is_empty() || name.len() > max {
        return Err(format!(
            "it must be 1 to {max} characters long, not {}",
            name.len()
        ));
    }
    name.split('.').try_for_each(|label| dns_label(label, 63))
}
