//! A plain sequential reference model of the item API: a map per container. Tests run the
//! same operations against a store and this model and compare after every step.

use std::collections::BTreeMap;

use tenure::{ErrorCode, Version};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelItem {
    pub value: Vec<u8>,
    pub version: Version,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Model {
    pub containers: BTreeMap<String, BTreeMap<Vec<u8>, ModelItem>>,
}

/// The model's verdict on a write: `Ok` (it writes), or the code the store must return.
pub type Verdict = Result<(), ErrorCode>;

impl Model {
    pub fn create_container(&mut self, name: &str) -> Verdict {
        if self.containers.contains_key(name) {
            return Err(ErrorCode::ContainerAlreadyExists);
        }
        self.containers.insert(name.to_owned(), BTreeMap::new());
        Ok(())
    }

    pub fn delete_container(&mut self, name: &str) -> Verdict {
        self.containers
            .remove(name)
            .map(|_| ())
            .ok_or(ErrorCode::ContainerNotFound)
    }

    pub fn get(&self, container: &str, key: &[u8]) -> Result<&ModelItem, ErrorCode> {
        self.containers
            .get(container)
            .ok_or(ErrorCode::ContainerNotFound)?
            .get(key)
            .ok_or(ErrorCode::NotFound)
    }

    /// Decides a put with an optional `if_match` version (`None` = unconditional) and
    /// `create_only`.
    pub fn check_put(
        &self,
        container: &str,
        key: &[u8],
        if_match: Option<Version>,
        create_only: bool,
    ) -> Verdict {
        let items = self
            .containers
            .get(container)
            .ok_or(ErrorCode::ContainerNotFound)?;
        let current = items.get(key);
        if let Some(expected) = if_match {
            if current.is_none_or(|item| item.version != expected) {
                return Err(ErrorCode::ConditionNotMet);
            }
        }
        if create_only && current.is_some() {
            return Err(ErrorCode::AlreadyExists);
        }
        Ok(())
    }

    pub fn apply_put(&mut self, container: &str, key: &[u8], value: &[u8], version: Version) {
        self.containers.get_mut(container).expect("checked").insert(
            key.to_vec(),
            ModelItem {
                value: value.to_vec(),
                version,
            },
        );
    }

    pub fn check_delete(&self, container: &str, key: &[u8]) -> Verdict {
        self.get(container, key).map(|_| ())
    }

    pub fn apply_delete(&mut self, container: &str, key: &[u8]) {
        self.containers
            .get_mut(container)
            .expect("checked")
            .remove(key);
    }
}
