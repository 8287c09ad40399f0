//! Pages of `ListWorkspaces`, as Google's API guidelines have them (AIP-158).
//!
//! A request gives a page size, and a token saying where the last page
//! ended. The token names the last workspace given (its creation time and
//! id). So a page goes on from there however many workspaces were created
//! since.

use crate::error::{Error, Result};
use crate::store::WorkspaceRow;
use crate::validate;

/// Most workspaces in one page; a larger `page_size` is taken as this.
pub const MAX_PAGE_SIZE: usize = 1000;

/// The page a request asks for.
#[derive(Debug)]
pub struct Page {
    /// The creation time and id of the workspace it follows, if any.
    after: Option<(i64, String)>,
    /// How many workspaces it holds at most; `None` for all.
    size: Option<usize>,
}

impl Page {
    /// The page of a request's `page_size` and `page_token`.
    pub fn of(page_size: i32, page_token: &str) -> Result<Self> {
        Ok(Self {
            size: self::page_size(page_size)?,
            after: after(page_token)?,
        })
    }

    /// Where to read from: after this workspace (creation time and id).
    pub fn after(&self) -> Option<(i64, String)> {
        self.after.clone()
    }

    /// How many workspaces to read: one more than the page holds.
    ///
    /// The extra one tells whether another page follows.
    pub fn limit(&self) -> Option<i64> {
        self.size.map(|size| size as i64 + 1)
    }

    /// The page out of what was read up to [`Page::limit`]: its workspaces,
    /// and the next page's token (empty when none follows).
    pub fn cut(&self, mut rows: Vec<WorkspaceRow>) -> (Vec<WorkspaceRow>, String) {
        let mut next_page_token = String::new();
        if let Some(size) = self.size.filter(|&size| rows.len() > size) {
            rows.truncate(size);
            if let Some(last) = rows.last() {
                next_page_token = token(last.created_at, &last.id);
            }
        }
        (rows, next_page_token)
    }
}

/// How many workspaces a request asks for: `None` for every one (0).
fn page_size(asked: i32) -> Result<Option<usize>> {
    match usize::try_from(asked) {
        Ok(0) => Ok(None),
        Ok(size) => Ok(Some(size.min(MAX_PAGE_SIZE))),
        Err(_) => Err(Error::invalid(
            "page_size",
            format!("page_size is {asked}; it must be 0 (every workspace) or more"),
        )),
    }
}

/// The token of the page after one that ended with this workspace.
fn token(created_at: i64, workspace_id: &str) -> String {
    format!("{created_at}.{workspace_id}")
}

/// Where a request's page starts: after the workspace its token names
/// (creation time and id), or at the oldest (no token).
fn after(page_token: &str) -> Result<Option<(i64, String)>> {
    if page_token.is_empty() {
        return Ok(None);
    }
    // Never echoed: a token comes back as it was given, or is not ours.
    let not_ours = || {
        Error::invalid(
            "page_token",
            "page_token is not one this service gave: pass a next_page_token back unchanged",
        )
    };
    let (created_at, workspace_id) = page_token.split_once('.').ok_or_else(not_ours)?;
    let created_at = created_at.parse().map_err(|_| not_ours())?;
    validate::id("page_token", workspace_id).map_err(|_| not_ours())?;
    Ok(Some((created_at, workspace_id.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_names_where_its_page_ended() {
        let id = "0b7e5a53-6f1f-4d43-9b1e-2f8f0c1d5e6a";
        let token = token(1_733_000_000_000_000, id);
        assert_eq!(
            after(&token).expect("ours"),
            Some((1_733_000_000_000_000, id.to_owned()))
        );
        assert_eq!(after("").expect("the start"), None);
        for bad in [
            "garbage",
            "12",
            "x.0b7e5a53-6f1f-4d43-9b1e-2f8f0c1d5e6a",
            "12.not-an-id",
            "12.0B7E5A53-6F1F-4D43-9B1E-2F8F0C1D5E6A",
        ] {
            let refused = after(bad).expect_err(bad).to_string();
            assert!(refused.contains("page_token is not one"), "{refused}");
        }
    }

    #[test]
    fn page_sizes() {
        assert_eq!(page_size(0).expect("all"), None);
        assert_eq!(page_size(7).expect("seven"), Some(7));
        assert_eq!(page_size(i32::MAX).expect("capped"), Some(MAX_PAGE_SIZE));
        let refused = page_size(-1).expect_err("negative").to_string();
        assert!(refused.contains("page_size is -1"), "{refused}");
    }
}
