//! What every listener that turns messages into spool records holds (GELF,
//! syslog): the source's name, spool, receiver settings, labels, relabel
//! rules and tenant, made once from the [`NetSource`].

use std::sync::Arc;

use super::NetSource;
use crate::config::ReceiverConfig;
use crate::spool::{SourceSpool, Stamps};

/// One listener's source: where its records go and how they are labelled.
pub struct ReceiverBase {
    pub name: Arc<str>,
    pub spool: Arc<SourceSpool>,
    pub config: ReceiverConfig,
    pub labels: crate::relabel::Labels,
    pub relabel: Option<Arc<crate::relabel::Rules>>,
    pub tenant: Option<String>,
    /// Each stream's last timestamp: equal ones (a sender's second) are made distinct.
    pub stamps: Stamps,
}

impl ReceiverBase {
    pub fn new(s: &NetSource, spool: Arc<SourceSpool>) -> Self {
        Self {
            name: s.name.clone(),
            spool,
            config: s.config.receiver.clone().unwrap_or_default(),
            labels: s.config.labels.clone(),
            relabel: s.relabel.clone(),
            tenant: s.config.tenant_id.clone(),
            stamps: Stamps::new(),
        }
    }
}
