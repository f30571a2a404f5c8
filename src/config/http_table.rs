//! [`http_table!`]: a config table's struct with Prometheus' HTTP client
//! keys written in place among its own fields (see `super::http`). Apart
//! from `super::http` so that the tables it writes (an `oauth2` table's
//! among them) import no checks.

/// A config table's struct, `Default` and `http()` ([`HttpKeys`]), with
/// groups of Prometheus' HTTP client keys where the body names them:
///
/// - `auth;`: `basic_auth`, `bearer_token`, `bearer_token_file`, `oauth2`
/// - `tls;`: `tls` (unset: the system's roots, no client certificate)
/// - `proxy;`: `proxy_url`, `no_proxy`, `proxy_connect_header`
///
/// Each of the table's own fields is written `pub name: Type = default,`.
/// The struct's attributes (derives, `#[serde(default)]`) are the caller's.
macro_rules! http_table {
    (
        $(#[$meta:meta])*
        pub struct $name:ident { $($body:tt)* }
    ) => {
        $crate::config::http_table::http_table!(@munch [$(#[$meta])*] $name [] [] [] $($body)*);
    };
    (@munch $meta:tt $name:ident [$($f:tt)*] [$($d:tt)*] [$($k:tt)*] auth; $($rest:tt)*) => {
        $crate::config::http_table::http_table!(@munch $meta $name [$($f)*
            /// Basic auth to the service (`username`, `password` or `password_file`).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub basic_auth: Option<$crate::config::BasicAuth>,
            /// A bearer token sent to the service (a secret).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub bearer_token: Option<$crate::util::Secret>,
            /// A file holding the bearer token, read again for every request.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub bearer_token_file: Option<std::path::PathBuf>,
            /// A bearer token got with the OAuth 2.0 client credentials grant (as `client.oauth2`).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub oauth2: Option<$crate::config::OAuth2Config>,
        ] [$($d)* basic_auth: None, bearer_token: None, bearer_token_file: None, oauth2: None,]
        [$($k)* basic_auth bearer_token bearer_token_file oauth2] $($rest)*);
    };
    (@munch $meta:tt $name:ident [$($f:tt)*] [$($d:tt)*] [$($k:tt)*] tls; $($rest:tt)*) => {
        $crate::config::http_table::http_table!(@munch $meta $name [$($f)*
            /// TLS to the service: `client.tls`'s keys.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub tls: Option<$crate::config::TlsConfig>,
        ] [$($d)* tls: None,] [$($k)* tls] $($rest)*);
    };
    (@munch $meta:tt $name:ident [$($f:tt)*] [$($d:tt)*] [$($k:tt)*] proxy; $($rest:tt)*) => {
        $crate::config::http_table::http_table!(@munch $meta $name [$($f)*
            /// An HTTP(S) proxy the service is reached through; unset:
            /// `HTTPS_PROXY` and `NO_PROXY` of the environment apply.
            #[serde(skip_serializing_if = "Option::is_none")]
            pub proxy_url: Option<$crate::util::Secret>,
            /// Hosts reached without the proxy (`example.com,.internal,10.0.0.0/8`);
            /// needs `proxy_url` (without it, `NO_PROXY` of the environment).
            #[serde(skip_serializing_if = "Option::is_none")]
            pub no_proxy: Option<String>,
            /// Headers sent to the proxy (such as `Proxy-Authorization`); values are
            /// secrets. Needs `proxy_url`.
            #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
            pub proxy_connect_header: std::collections::BTreeMap<String, $crate::util::Secret>,
        ] [$($d)* proxy_url: None, no_proxy: None, proxy_connect_header: std::collections::BTreeMap::new(),]
        [$($k)* proxy_url no_proxy proxy_connect_header] $($rest)*);
    };
    (@munch $meta:tt $name:ident [$($f:tt)*] [$($d:tt)*] [$($k:tt)*]
        $(#[$fm:meta])* pub $field:ident : $t:ty = $default:expr, $($rest:tt)*) => {
        $crate::config::http_table::http_table!(@munch $meta $name [$($f)* $(#[$fm])* pub $field: $t,]
            [$($d)* $field: $default,] [$($k)*] $($rest)*);
    };
    (@munch [$($meta:tt)*] $name:ident [$($f:tt)*] [$($d:tt)*] [$($k:ident)*]) => {
        $($meta)*
        pub struct $name { $($f)* }

        impl Default for $name {
            fn default() -> Self {
                Self { $($d)* }
            }
        }

        impl $name {
            /// The keys of the table's groups (`auth;`, `tls;`, `proxy;`); a
            /// key it has outside them is its own, unset here.
            pub fn http(&self) -> $crate::config::HttpKeys<'_> {
                let mut keys = $crate::config::HttpKeys::none();
                $($crate::config::http_table::http_table!(@key keys self $k);)*
                keys
            }
        }
    };
    (@key $keys:ident $s:ident no_proxy) => { $keys.no_proxy = $s.no_proxy.as_deref(); };
    (@key $keys:ident $s:ident proxy_connect_header) => { $keys.proxy_connect_header = &$s.proxy_connect_header; };
    (@key $keys:ident $s:ident $k:ident) => { $keys.$k = $s.$k.as_ref(); };
}

pub(crate) use http_table;
