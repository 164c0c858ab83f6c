//! Containers (docs/spec.md §1, §5): create, delete, properties, metadata, listing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::core::Engine;
use crate::backend::options::{ContainerOptions, ContainerProperties, ContainerWriteOptions};
use crate::clock::Timestamp;
use crate::error::{Error, ErrorCode, Result};
use crate::index::catalog::{ContainerState, Incarnation, LIVE};
use crate::log::SpaceUse;
use crate::record::{self};
use crate::rules::conditions::{self, ItemFacts};
use crate::rules::lease::{self, ContainerOperation};
use crate::rules::validate;
use crate::types::ETag;

impl Engine {
    // ----- containers -----

    pub(crate) fn create_container(
        &self,
        name: &str,
        options: &ContainerOptions,
    ) -> Result<ContainerProperties> {
        self.check_open()?;
        validate::container_name(name)?;
        validate::metadata(&options.metadata, &self.limits)?;
        crate::rules::ttl::container_default_ttl_seconds(
            options.default_ttl_seconds.map(i64::from),
        )?;
        let _changes = self.catalog.changes.lock();
        if self.catalog.live(name).is_some() {
            return Err(Error::rejected(ErrorCode::ContainerAlreadyExists));
        }
        let now = self.now();
        let payload = record::encode_container_create(
            name,
            options.default_ttl_seconds,
            &options.metadata,
            now,
        );
        let mut reservation = self.log.reserve(payload.len(), SpaceUse::Ordinary)?;
        reservation.write_payload(&payload)?;
        let version = reservation.version();
        let incarnation = Arc::new(Incarnation {
            id: version,
            name: name.to_owned(),
            default_ttl_seconds: options.default_ttl_seconds,
            deleted_version: AtomicU64::new(LIVE),
            state: Mutex::new(ContainerState {
                lease: None,
                metadata: options.metadata.clone(),
                etag_version: version,
                last_modified: now,
            }),
        });
        self.catalog.insert(Arc::clone(&incarnation));
        reservation.commit()?;
        Ok(properties_of(&incarnation))
    }

    /// Deletes the container and, atomically, every item in it.
    pub(crate) fn delete_container(
        &self,
        name: &str,
        options: &ContainerWriteOptions,
    ) -> Result<()> {
        self.check_open()?;
        validate::container_name(name)?;
        validate::container_conditions(&options.conditions)?;
        let _changes = self.catalog.changes.lock();
        let incarnation = self
            .catalog
            .live(name)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        check_container_write(
            &incarnation,
            options,
            ContainerOperation::Delete,
            self.now(),
        )?;
        let payload = record::encode_container_delete(incarnation.id);
        let mut reservation = self.log.reserve(payload.len(), SpaceUse::Deleting)?;
        reservation.write_payload(&payload)?;
        // Set before the record completes, so every item write ordered after it in the log
        // sees the deletion once its own record completes.
        incarnation
            .deleted_version
            .store(reservation.version(), Ordering::Release);
        reservation.commit()?;
        Ok(())
    }

    pub(crate) fn container_properties(&self, name: &str) -> Result<ContainerProperties> {
        self.check_open()?;
        validate::container_name(name)?;
        let incarnation = self
            .catalog
            .visible(name, self.version())
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        Ok(properties_of(&incarnation))
    }

    pub(crate) fn set_container_metadata(
        &self,
        name: &str,
        metadata: &[(String, String)],
        options: &ContainerWriteOptions,
    ) -> Result<ETag> {
        self.check_open()?;
        validate::container_name(name)?;
        validate::metadata(metadata, &self.limits)?;
        validate::container_conditions(&options.conditions)?;
        let _changes = self.catalog.changes.lock();
        let incarnation = self
            .catalog
            .live(name)
            .ok_or_else(|| Error::rejected(ErrorCode::ContainerNotFound))?;
        check_container_write(&incarnation, options, ContainerOperation::Other, self.now())?;
        let now = self.now();
        let payload = record::encode_container_set_metadata(incarnation.id, metadata, now);
        let mut reservation = self.log.reserve(payload.len(), SpaceUse::Ordinary)?;
        reservation.write_payload(&payload)?;
        let version = reservation.version();
        {
            let mut state = incarnation.state.lock();
            state.metadata = metadata.to_vec();
            state.etag_version = version;
            state.last_modified = now;
        }
        reservation.commit()?;
        Ok(ETag(version))
    }

    pub(crate) fn list_containers(&self) -> Result<Vec<String>> {
        self.check_open()?;
        Ok(self.catalog.names_at(self.version()))
    }
}

fn properties_of(incarnation: &Incarnation) -> ContainerProperties {
    let state = incarnation.state.lock();
    ContainerProperties {
        name: incarnation.name.clone(),
        etag: ETag(state.etag_version),
        last_modified: state.last_modified,
        metadata: state.metadata.clone(),
        default_ttl_seconds: incarnation.default_ttl_seconds,
    }
}

/// Container writes check the container's lease (docs/spec.md §5), then date and ETag conditions on
/// the container's own ETag.
fn check_container_write(
    incarnation: &Incarnation,
    options: &ContainerWriteOptions,
    operation: ContainerOperation,
    now: Timestamp,
) -> Result<()> {
    let conditions = &options.conditions;
    let state = incarnation.state.lock();
    lease::check_lease_for_container_operation(
        state.lease.as_ref(),
        now,
        options.lease_id,
        operation,
    )?;
    let facts = ItemFacts {
        etag: ETag(state.etag_version),
        version: state.etag_version,
        last_modified: state.last_modified,
    };
    conditions::check_write_conditions(conditions::WriteKind::SetMetadata, conditions, Some(&facts))
}
