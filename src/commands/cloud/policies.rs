//! `tailship cloud policies ...`

use super::*;

pub(super) async fn policies(client: &CloudClient, cmd: &PolicyCommand, out: Output) -> anyhow::Result<()> {
    let mut w = std::io::stdout().lock();
    match cmd {
        PolicyCommand::Create { region, name, display_name, scopes, realms, label_policies, allowed_subnets } => {
            let realms = realms_from_flags(realms, label_policies).map_err(|e| cloud_err(e.into()))?;
            let body = NewPolicy {
                name: name.clone(),
                display_name: display_name.clone(),
                scopes: scopes.clone(),
                realms,
                conditions: (!allowed_subnets.is_empty())
                    .then(|| Conditions { allowed_subnets: allowed_subnets.clone() }),
            };
            let v = client.create_policy(region, &body).await.map_err(cloud_err)?;
            print_policy(&mut w, &v, out)?;
        }
        PolicyCommand::List { region, name, realm_type, realm_id, status, pages: Pages { page_size, limit } } => {
            let f = PolicyFilter {
                name: name.clone(),
                realm_type: realm_type.clone(),
                realm_identifier: realm_id.clone(),
                status: *status,
                page_size: *page_size,
            };
            let items = client.list_policies(region, &f, *limit).await.map_err(cloud_err)?;
            if out == Output::Json {
                return Ok(output::json(&mut w, &Value::Array(items))?);
            }
            let headers = ["ID", "NAME", "STATUS", "SCOPES", "REALMS", "ALLOWED SUBNETS"];
            print_rows(&mut w, &items, "an access policy", &headers, |p: AccessPolicy| {
                vec![
                    p.id,
                    p.name,
                    cell(p.status.as_deref()),
                    p.scopes.join(","),
                    realms_text(&p.realms),
                    subnets_text(&p.conditions),
                ]
            })?;
        }
        PolicyCommand::Get(Record { id, region }) => {
            let v = client.get_policy(region, id).await.map_err(cloud_err)?;
            print_policy(&mut w, &v, out)?;
        }
        PolicyCommand::Update {
            record: Record { id, region },
            display_name,
            scopes,
            realms,
            label_policies,
            allowed_subnets,
            clear_conditions,
            status,
        } => {
            let flags = UpdateFlags {
                display_name,
                scopes,
                realms,
                label_policies,
                allowed_subnets,
                clear_conditions: *clear_conditions,
                status: *status,
            };
            let v = flags.send(client, region, id).await?;
            print_policy(&mut w, &v, out)?;
        }
        PolicyCommand::Delete(Record { id, region }) => {
            client.delete_policy(region, id).await.map_err(cloud_err)?;
            print_deleted(&mut w, out, "access policy", id)?;
        }
    }
    Ok(())
}

/// The flags of `cloud policies update` (the record aside).
struct UpdateFlags<'a> {
    display_name: &'a Option<String>,
    scopes: &'a [String],
    realms: &'a [String],
    label_policies: &'a [String],
    allowed_subnets: &'a [String],
    clear_conditions: bool,
    status: Option<PolicyStatus>,
}

impl UpdateFlags<'_> {
    /// Updates policy `id`: the flags checked, the policy read, the
    /// members given set over it; returns the service's answer.
    async fn send(&self, client: &CloudClient, region: &str, id: &str) -> anyhow::Result<Value> {
        let given_realms = self.check()?;
        // Scopes and realms are required on update, and members left out
        // could be lost: start from the policy as it is.
        let current: AccessPolicy = parse(&client.get_policy(region, id).await.map_err(cloud_err)?, "the policy")?;
        let body = self.update(current, given_realms);
        client.update_policy(region, id, &body).await.map_err(cloud_err)
    }

    /// Checks the flags before anything is sent, the read of the current
    /// policy included; returns the realms given.
    fn check(&self) -> anyhow::Result<Vec<Realm>> {
        let mut c = Checks::new();
        if let Some(d) = self.display_name {
            c.check("displayName", validate::display_name(d));
        }
        for (i, s) in self.allowed_subnets.iter().enumerate() {
            c.check(&format!("conditions.allowedSubnets[{i}]"), validate::cidr(s));
        }
        let nothing = self.display_name.is_none()
            && self.scopes.is_empty()
            && self.realms.is_empty()
            && self.allowed_subnets.is_empty()
            && !self.clear_conditions
            && self.status.is_none();
        if nothing {
            c.fail("body", "nothing to update: give --display-name, --scope, --realm, --allowed-subnet, --clear-conditions or --status");
        }
        c.finish().map_err(|e| cloud_err(e.into()))?;
        let given_realms = realms_from_flags(self.realms, self.label_policies).map_err(|e| cloud_err(e.into()))?;
        if !self.scopes.is_empty() && !given_realms.is_empty() {
            let mut c = Checks::new();
            validate::scopes(&mut c, self.scopes);
            validate::realms(&mut c, &given_realms, self.scopes);
            c.finish().map_err(|e| cloud_err(e.into()))?;
        }
        Ok(given_realms)
    }

    /// The update to send: the members given, the others as `current` has them.
    fn update(&self, current: AccessPolicy, given_realms: Vec<Realm>) -> PolicyUpdate {
        let conditions = if self.clear_conditions {
            Some(ConditionsUpdate::Clear)
        } else if !self.allowed_subnets.is_empty() {
            Some(ConditionsUpdate::Set(Conditions { allowed_subnets: self.allowed_subnets.to_vec() }))
        } else {
            current.conditions.clone().filter(|c| !c.allowed_subnets.is_empty()).map(ConditionsUpdate::Set)
        };
        let current_status = match current.status.as_deref() {
            Some("active") => Some(PolicyStatus::Active),
            Some("inactive") => Some(PolicyStatus::Inactive),
            _ => None,
        };
        PolicyUpdate {
            display_name: self
                .display_name
                .clone()
                .or_else(|| (!current.display_name.is_empty()).then(|| current.display_name.clone())),
            scopes: if self.scopes.is_empty() { current.scopes.clone() } else { self.scopes.to_vec() },
            realms: if given_realms.is_empty() { current.realms.clone() } else { given_realms },
            conditions,
            status: self.status.or(current_status),
        }
    }
}
