//! Machine-readable refusals.
//!
//! They follow the gRPC richer error model, as Google's AIP-193 lays it out.
//! Every refusal the services make themselves carries a
//! `google.rpc.ErrorInfo` in the `holdfast` domain, besides its code and
//! message. gRPC's own refusals, such as `UNIMPLEMENTED`, do not. The
//! `reason` names what went wrong ([`Reason`]). The metadata names what it
//! concerns (`sessionId`, `workspaceId`, ...). A request field that is
//! missing or malformed also gets a `google.rpc.BadRequest` naming the
//! field.
//!
//! Clients in any language branch on the reason instead of parsing
//! messages. grpcurl prints both, since the servers' reflection knows the
//! types.

use std::collections::HashMap;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// `ErrorInfo.domain` of every reason here.
pub const DOMAIN: &str = "holdfast";

/// Longest metadata value sent, in bytes.
///
/// An id is 36. A longer program or directory is cut, ending in "…".
pub const MAX_METADATA_VALUE_BYTES: usize = 256;

/// Why a request was refused: `ErrorInfo.reason`.
///
/// It is spelt as the value's name in `holdfast.errors.v1.ErrorReason`
/// ([`Reason::as_str_name`]). Each is documented there.
pub use crate::proto::errors::v1::ErrorReason as Reason;

/// A request field that is missing, malformed or out of range.
///
/// These are the services' `InvalidArgument` errors.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct BadField {
    /// The field, as a path in the request (`argv[2]`, `create.cwd`).
    pub field: String,
    /// What is wrong with it, naming it.
    pub message: String,
}

impl BadField {
    /// `field` is wrong, as `message` says.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same fault, its field a path inside `parent` (a request's
    /// `create` or `spawn`).
    pub fn within(self, parent: &str) -> Self {
        Self {
            field: format!("{parent}.{}", self.field),
            ..self
        }
    }
}

/// A refusal about to become a [`Status`].
///
/// It holds its code, message and reason, and what else it names.
#[derive(Debug)]
pub struct Refusal {
    code: Code,
    reason: String,
    message: String,
    metadata: HashMap<String, String>,
    field: Option<String>,
}

impl Refusal {
    /// `code` for `reason`, saying `message` (cut to what a header holds).
    pub fn new(code: Code, reason: Reason, message: impl Into<String>) -> Self {
        Self::with_reason(code, reason.as_str_name().to_owned(), message)
    }

    /// A refusal whose reason came from elsewhere in the domain (the
    /// pty-daemon's, passed on by the host-service).
    pub fn with_reason(code: Code, reason: String, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: crate::status_text::bounded(message.into()),
            metadata: HashMap::new(),
            field: None,
        }
    }

    /// The refusal of a request for `bad`'s field.
    pub fn invalid(bad: BadField) -> Self {
        Self {
            field: Some(bad.field),
            ..Self::new(Code::InvalidArgument, Reason::InvalidField, bad.message)
        }
    }

    /// Names what the refusal concerns: `key` (lowerCamelCase) is `value`.
    ///
    /// `value` is cut to [`MAX_METADATA_VALUE_BYTES`], since it travels in a
    /// header.
    pub fn about(mut self, key: &str, value: impl ToString) -> Self {
        let value = crate::status_text::cut_to(value.to_string(), MAX_METADATA_VALUE_BYTES);
        self.metadata.insert(key.to_owned(), value);
        self
    }

    /// Adds the metadata of `other` that this refusal does not set.
    pub fn about_all(mut self, other: HashMap<String, String>) -> Self {
        for (key, value) in other {
            self.metadata.entry(key).or_insert(value);
        }
        self
    }
}

impl From<Refusal> for Status {
    fn from(refusal: Refusal) -> Self {
        let mut details = ErrorDetails::with_error_info(refusal.reason, DOMAIN, refusal.metadata);
        if let Some(field) = refusal.field {
            details.add_bad_request_violation(field, refusal.message.clone());
        }
        Status::with_error_details(refusal.code, refusal.message, details)
    }
}

/// The reason `status` gives in holdfast's domain, if it gives one, with
/// the metadata beside it.
pub fn reason_of(status: &Status) -> Option<(String, HashMap<String, String>)> {
    status
        .get_details_error_info()
        .filter(|info| info.domain == DOMAIN)
        .map(|info| (info.reason, info.metadata))
}

/// The field `status` names as malformed, if it names one.
pub fn field_of(status: &Status) -> Option<String> {
    let bad = status.get_details_bad_request()?;
    bad.field_violations
        .into_iter()
        .next()
        .map(|violation| violation.field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_upper_snake_case() {
        let reasons = (1..).map_while(|value| Reason::try_from(value).ok());
        for reason in reasons {
            let spelt = reason.as_str_name();
            assert!(spelt.len() <= 63, "{spelt}");
            // AIP-193: [A-Z][A-Z0-9_]+[A-Z0-9].
            assert!(
                spelt.starts_with(|c: char| c.is_ascii_uppercase())
                    && spelt
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                    && !spelt.ends_with('_'),
                "{spelt}"
            );
        }
        assert_eq!(Reason::InvalidField.as_str_name(), "INVALID_FIELD");
    }

    #[test]
    fn a_refusal_carries_its_reason_metadata_and_field() {
        let status = Status::from(
            Refusal::invalid(BadField::new("cwd", "cwd must be absolute").within("create"))
                .about("sessionId", "s1"),
        );
        assert_eq!(status.code(), Code::InvalidArgument);
        assert_eq!(status.message(), "cwd must be absolute");
        let (reason, metadata) = reason_of(&status).expect("an ErrorInfo");
        assert_eq!(reason, "INVALID_FIELD");
        assert_eq!(metadata.get("sessionId").map(String::as_str), Some("s1"));
        assert_eq!(field_of(&status).as_deref(), Some("create.cwd"));

        let plain = Status::from(Refusal::new(
            Code::NotFound,
            Reason::SessionNotFound,
            "x".repeat(5000),
        ));
        assert!(plain.message().len() <= crate::status_text::MAX_STATUS_MESSAGE_BYTES);
        assert_eq!(field_of(&plain), None);
        assert_eq!(reason_of(&plain).unwrap().0, "SESSION_NOT_FOUND");
    }

    #[test]
    fn another_domain_is_no_reason_of_ours() {
        let details =
            ErrorDetails::with_error_info("SESSION_NOT_FOUND", "example.com", HashMap::new());
        let status = Status::with_error_details(Code::NotFound, "m", details);
        assert_eq!(reason_of(&status), None);
        assert_eq!(reason_of(&Status::not_found("m")), None);
    }
}
