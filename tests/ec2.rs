//! `ec2` targets (Promtail's `ec2_sd_configs`) through the real binary,
//! against a small EC2 query API written here (its `endpoint`), and an STS
//! one for `role_arn` (`AWS_ENDPOINT_URL_STS`, as AWS's SDKs read it):
//! instances are targets with Prometheus' `__meta_ec2_*` labels, tailed
//! once the relabel rules give them a `__path__`; every request is signed
//! with Signature Version 4, by the role's temporary keys once assumed.

use crate::agent;
use crate::common;
use crate::discovery;
use crate::mockhttp;
use crate::scenario;

use std::collections::BTreeMap;
use std::time::Duration;

use agent::{write_file, Agent};
use common::wait_for;
use discovery::{bad_sources_exit_2, check_hides, labels_of};
use mockhttp::{Mock, Reply, Req};
use scenario::{run_agent, Scenario};

fn form(req: &Req) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(req.body.as_bytes()).into_owned().collect()
}

const INSTANCE: &str = r#"<item>
  <instanceId>i-0abc</instanceId><imageId>ami-123</imageId>
  <instanceState><code>16</code><name>running</name></instanceState>
  <privateDnsName>ip-10-0-1-5.ec2.internal</privateDnsName><dnsName>ec2-54-1-2-3.compute-1.amazonaws.com</dnsName>
  <instanceType>t3.micro</instanceType><placement><availabilityZone>us-east-1a</availabilityZone></placement>
  <subnetId>subnet-1</subnetId><vpcId>vpc-1</vpcId><privateIpAddress>10.0.1.5</privateIpAddress>
  <ipAddress>54.1.2.3</ipAddress><architecture>x86_64</architecture><instanceLifecycle>spot</instanceLifecycle>
  <tagSet><item><key>Name</key><value>web-1</value></item><item><key>team:name</key><value>shop</value></item></tagSet>
  <networkInterfaceSet><item><subnetId>subnet-1</subnetId><attachment><deviceIndex>0</deviceIndex></attachment>
    <ipv6AddressesSet><item><ipv6Address>2600:1f18::5</ipv6Address><isPrimaryIpv6>true</isPrimaryIpv6></item></ipv6AddressesSet>
  </item></networkInterfaceSet>
</item>"#;

/// EC2: two pages of instances; every request must be signed by `akid`.
fn ec2(req: &Req, akid: &str) -> Reply {
    let auth = req.header("authorization").unwrap_or("");
    if !auth.starts_with(&format!("AWS4-HMAC-SHA256 Credential={akid}/"))
        || !auth.contains("/us-east-1/ec2/aws4_request")
    {
        return Reply::text(401, "<Response><Errors><Error><Code>AuthFailure</Code></Error></Errors></Response>");
    }
    let f = form(req);
    let xmlns = r#"xmlns="http://ec2.amazonaws.com/doc/2016-11-15/""#;
    match f.get("Action").map(String::as_str) {
        Some("DescribeAvailabilityZones") => Reply::text(200, &format!(
            "<DescribeAvailabilityZonesResponse {xmlns}><availabilityZoneInfo><item><zoneName>us-east-1a</zoneName><zoneId>use1-az4</zoneId></item></availabilityZoneInfo></DescribeAvailabilityZonesResponse>"
        )),
        Some("DescribeInstances") if !f.contains_key("NextToken") => Reply::text(200, &format!(
            "<DescribeInstancesResponse {xmlns}><reservationSet><item><ownerId>123456789012</ownerId><instancesSet>{INSTANCE}</instancesSet></item></reservationSet><nextToken>page2</nextToken></DescribeInstancesResponse>"
        )),
        Some("DescribeInstances") => Reply::text(200, &format!(
            "<DescribeInstancesResponse {xmlns}><reservationSet><item><ownerId>123456789012</ownerId><instancesSet><item><instanceId>i-0def</instanceId><imageId>ami-9</imageId><instanceState><name>running</name></instanceState><instanceType>t3.small</instanceType><placement><availabilityZone>us-east-1b</availabilityZone></placement><privateIpAddress>10.0.1.6</privateIpAddress><tagSet><item><key>Name</key><value>db-1</value></item></tagSet></item><item><instanceId>i-0none</instanceId><instanceState><name>stopped</name></instanceState><tagSet><item><key>Name</key><value>gone-1</value></item></tagSet></item></instancesSet></item></reservationSet></DescribeInstancesResponse>"
        )),
        _ => Reply::text(400, "<Response><Errors><Error><Code>InvalidAction</Code></Error></Errors></Response>"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ec2_instances_with_static_keys_name_the_files_and_a_converted_promtail_job_ships() {
    let api = Mock::start(|req, _| ec2(req, "AKIDTEST")).await;
    let s = Scenario::loki();
    s.name_logs(&["web-1", "db-1", "gone-1"]);
    let jobs = format!(
        r#"  - job_name: ec2
    ec2_sd_configs:
      - region: us-east-1
        endpoint: {api}/
        access_key: AKIDTEST
        secret_key: wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY
        port: 9100
        refresh_interval: 10s
        filters:
          - name: tag:Name
            values: [web-1, db-1, gone-1]
    relabel_configs:
      - source_labels: [__meta_ec2_tag_Name]
        target_label: __path__
        replacement: {d}/logs/$1/*.log
      - source_labels: [__meta_ec2_tag_Name]
        target_label: name
      - source_labels: [__meta_ec2_availability_zone_id]
        target_label: az_id
      - source_labels: [__meta_ec2_public_ip]
        target_label: public_ip
      - source_labels: [__meta_ec2_tag_team_name]
        target_label: team
      - source_labels: [__meta_ec2_primary_ipv6_addresses]
        target_label: ipv6
      - source_labels: [__meta_ec2_subnet_id]
        target_label: subnets
      - source_labels: [__meta_ec2_owner_id]
        target_label: owner
      - source_labels: [__address__]
        target_label: instance
"#,
        d = s.root().display(),
        api = api.url,
    );
    let cfg = s.convert(&jobs, "ec2_sd_configs");
    check_hides(&cfg, "wJalrXUtnFEMI");
    let agent = run_agent(cfg).await;
    let of = |q: &str| s.labels(q);
    let l = &s.wait_labels(&agent, r#"{name="web-1"}"#, 1)[0];
    assert_eq!(
        (l["az_id"].as_str(), l["public_ip"].as_str(), l["team"].as_str(), l["ipv6"].as_str(), l["subnets"].as_str()),
        ("use1-az4", "54.1.2.3", "shop", ",2600:1f18::5,", ",subnet-1,")
    );
    assert_eq!((l["owner"].as_str(), l["instance"].as_str()), ("123456789012", "10.0.1.5:9100"));
    assert!(wait_for(Duration::from_secs(20), || of(r#"{name="db-1"}"#).len() == 1), "the second page");
    assert!(of(r#"{name="gone-1"}"#).is_empty(), "an instance without an address is no target");
    let reqs = api.requests();
    let first = reqs.iter().find(|q| form(q).get("Action").map(String::as_str) == Some("DescribeInstances")).unwrap();
    let f = form(first);
    assert_eq!((f["Filter.1.Name"].as_str(), f["Filter.1.Value.2"].as_str()), ("tag:Name", "db-1"));
    assert!(first.header("x-amz-date").is_some(), "{first:?}");
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_role_is_assumed_and_its_temporary_keys_sign_the_ec2_requests() {
    let sts = Mock::start(|req, _| {
        let f = form(req);
        let auth = req.header("authorization").unwrap_or("");
        if f.get("Action").map(String::as_str) != Some("AssumeRole")
            || f.get("RoleArn").map(String::as_str) != Some("arn:aws:iam::123456789012:role/logs")
            || f.get("ExternalId").map(String::as_str) != Some("ext-1")
            || !auth.contains("Credential=AKIDBASE/") || !auth.contains("/us-east-1/sts/aws4_request")
        {
            return Reply::text(403, "<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>");
        }
        Reply::text(200, r#"<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><AccessKeyId>ASIATEMP</AccessKeyId><SecretAccessKey>tempsecret</SecretAccessKey><SessionToken>FwoGZXIvYXdzEJr-session</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>"#)
    })
    .await;
    let api = Mock::start(|req, _| {
        if req.header("x-amz-security-token") != Some("FwoGZXIvYXdzEJr-session") {
            return Reply::text(401, "<Response><Errors><Error><Code>AuthFailure</Code></Error></Errors></Response>");
        }
        ec2(req, "ASIATEMP")
    })
    .await;
    let s = Scenario::plain();
    let (r, d) = (&s.r, s.root());
    s.name_logs(&["web-1"]);
    // The base keys come from a profile of the shared credentials file.
    let creds = write_file(
        d,
        "credentials",
        "[default]\naws_access_key_id = AKIDWRONG\naws_secret_access_key = x\n\n[logs]\naws_access_key_id = AKIDBASE\naws_secret_access_key = basesecret\n",
    );
    let text = format!(
        r#"[[sources]]
host_label = false
scan_interval = "200ms"
ec2 = {{ region = "us-east-1", endpoint = "{api}/", profile = "logs", role_arn = "arn:aws:iam::123456789012:role/logs", external_id = "ext-1" }}
relabel = [
  {{ source_labels = ["__meta_ec2_tag_Name"], target_label = "__path__", replacement = "{d}/logs/$1/*.log" }},
  {{ source_labels = ["__meta_ec2_tag_Name"], target_label = "name" }},
]
"#,
        d = d.display(),
        api = api.url,
    );
    let cfg = s.write_toml("ec2.toml", &text);
    let env = [
        ("AWS_SHARED_CREDENTIALS_FILE", creds.to_str().unwrap().to_string()),
        ("AWS_ENDPOINT_URL_STS", sts.url.clone()),
    ];
    let agent = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Agent::start_with(&cfg, &env)
    })
    .await
    .unwrap();
    assert!(
        wait_for(Duration::from_secs(20), || labels_of(r, r#"{name="web-1"}"#).len() == 1),
        "{}",
        agent.stderr_text()
    );
    assert_eq!(sts.requests().len(), 1, "the temporary keys are kept until they near their expiry");
    assert!(!agent.stderr_text().contains("tempsecret"));
    assert!(agent.terminate(Duration::from_secs(10)).success());
}

#[test]
fn bad_ec2_settings_exit_2_naming_the_key_and_the_file() {
    let cases = [
        (r#"access_key = "AKID""#, "sources[0].ec2.secret_key"),
        (r#"endpoint = "ec2.local""#, "sources[0].ec2.endpoint"),
        (r#"filters = { "tag:Name" = [] }"#, "sources[0].ec2.filters"),
        (r#"refresh_interval = "0s""#, "sources[0].ec2.refresh_interval"),
        (r#"proxy_url = "socks://p""#, "sources[0].ec2.proxy_url"),
    ];
    bad_sources_exit_2(&cases.map(|(table, key)| (format!("ec2 = {{ {table} }}"), key)));
}
