//! [`object_path`]: the one way an object's path is formed from a prefix.

/// `prefix/name`, with no leading, trailing or doubled slash from the prefix:
/// the path of object `name` of the collection (or set) under `prefix`.
///
/// An empty prefix (an operator rooted at the collection) gives `name` itself.
pub fn object_path(prefix: &str, name: &str) -> String {
    let prefix = prefix.trim_matches('/');
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::object_path;

    #[test]
    fn a_prefix_joins_its_object_with_exactly_one_slash() {
        assert_eq!(object_path("", "data.atlas"), "data.atlas");
        assert_eq!(object_path("/", "data.atlas"), "data.atlas");
        assert_eq!(object_path("argo", "data.atlas"), "argo/data.atlas");
        assert_eq!(object_path("/a/b/", "deleted.mask"), "a/b/deleted.mask");
    }
}
