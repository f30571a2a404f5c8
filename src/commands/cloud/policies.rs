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
            let mut rows = Vec::new();
            for v in &items {
                let p: AccessPolicy = parse(v, "an access policy")?;
                rows.push(vec![
                    p.id.clone(),
                    p.name.clone(),
                    cell(p.status.as_deref()),
                    p.scopes.join(","),
                    realms_text(&p.realms),
                    subnets_text(&p.conditions),
                ]);
            }
            output::table(&mut w, &["ID", "NAME", "STATUS", "SCOPES", "REALMS", "ALLOWED SUBNETS"], &rows)?;
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
            // Check the flags before anything is sent, the read included.
            let mut c = Checks::new();
            if let Some(d) = display_name {
                c.check("displayName", validate::display_name(d));
            }
            for (i, s) in allowed_subnets.iter().enumerate() {
                c.check(&format!("conditions.allowedSubnets[{i}]"), validate::cidr(s));
            }
            let nothing = display_name.is_none()
                && scopes.is_empty()
                && realms.is_empty()
                && allowed_subnets.is_empty()
                && !clear_conditions
                && status.is_none();
            if nothing {
                c.fail("body", "nothing to update: give --display-name, --scope, --realm, --allowed-subnet, --clear-conditions or --status");
            }
            c.finish().map_err(|e| cloud_err(e.into()))?;
            let given_realms = realms_from_flags(realms, label_policies).map_err(|e| cloud_err(e.into()))?;
            if !scopes.is_empty() && !given_realms.is_empty() {
                let mut c = Checks::new();
                validate::scopes(&mut c, scopes);
                validate::realms(&mut c, &given_realms, scopes);
                c.finish().map_err(|e| cloud_err(e.into()))?;
            }
            // Scopes and realms are required on update, and members left out
            // could be lost: start from the policy as it is.
            let current: AccessPolicy = parse(&client.get_policy(region, id).await.map_err(cloud_err)?, "the policy")?;
            let conditions = if *clear_conditions {
                Some(ConditionsUpdate::Clear)
            } else if !allowed_subnets.is_empty() {
                Some(ConditionsUpdate::Set(Conditions { allowed_subnets: allowed_subnets.clone() }))
            } else {
                current.conditions.clone().filter(|c| !c.allowed_subnets.is_empty()).map(ConditionsUpdate::Set)
            };
            let current_status = match current.status.as_deref() {
                Some("active") => Some(PolicyStatus::Active),
                Some("inactive") => Some(PolicyStatus::Inactive),
                _ => None,
            };
            let body = PolicyUpdate {
                display_name: display_name
                    .clone()
                    .or_else(|| (!current.display_name.is_empty()).then(|| current.display_name.clone())),
                scopes: if scopes.is_empty() { current.scopes.clone() } else { scopes.clone() },
                realms: if given_realms.is_empty() { current.realms.clone() } else { given_realms },
                conditions,
                status: status.or(current_status),
            };
            let v = client.update_policy(region, id, &body).await.map_err(cloud_err)?;
            print_policy(&mut w, &v, out)?;
        }
        PolicyCommand::Delete(Record { id, region }) => {
            client.delete_policy(region, id).await.map_err(cloud_err)?;
            print_deleted(&mut w, out, "access policy", id)?;
        }
    }
    Ok(())
}
