//! Typed errors of the library. The binary wraps them in `anyhow`; the library never panics on
//! input that comes from a user, a file or the store.

/// Errors about games: variant names, positions, keys and actions that come from outside.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GameError {
    #[error("unknown game `{family}`; allowed families: {allowed}")]
    UnknownFamily { family: String, allowed: String },

    #[error("bad variant `{variant}`: {reason}")]
    BadVariant { variant: String, reason: String },

    #[error("bad position `{text}` for {variant}: {reason}")]
    BadPosition {
        variant: String,
        text: String,
        reason: String,
    },

    #[error("bad position key {key} for {variant}: {reason}")]
    BadKey {
        variant: String,
        key: String,
        reason: String,
    },

    #[error("illegal action {action} in {variant} position `{position}`; legal: {legal}")]
    IllegalAction {
        variant: String,
        action: String,
        position: String,
        legal: String,
    },
}

impl GameError {
    pub fn bad_variant(variant: impl Into<String>, reason: impl Into<String>) -> GameError {
        GameError::BadVariant {
            variant: variant.into(),
            reason: reason.into(),
        }
    }

    pub fn bad_position(
        variant: impl Into<String>,
        text: impl Into<String>,
        reason: impl Into<String>,
    ) -> GameError {
        GameError::BadPosition {
            variant: variant.into(),
            text: text.into(),
            reason: reason.into(),
        }
    }

    pub fn bad_key(
        variant: impl Into<String>,
        key: impl std::fmt::Debug,
        reason: impl Into<String>,
    ) -> GameError {
        GameError::BadKey {
            variant: variant.into(),
            key: format!("{key:?}"),
            reason: reason.into(),
        }
    }
}

/// A setting outside its allowed range: the key, the value given and what is allowed. Every
/// layer that validates settings raises it; the layer above wraps it with its own prefix
/// (`run spec: …`), so a message always names the key and the range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{key}` = {value} is out of range; allowed: {allowed}")]
pub struct SettingError {
    pub key: String,
    pub value: String,
    pub allowed: String,
}

impl SettingError {
    pub fn new(
        key: impl Into<String>,
        value: impl ToString,
        allowed: impl Into<String>,
    ) -> SettingError {
        SettingError {
            key: key.into(),
            value: value.to_string(),
            allowed: allowed.into(),
        }
    }
}
