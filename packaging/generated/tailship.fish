# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_tailship_global_optspecs
    string join \n log-format= log-level= h/help V/version
end

function __fish_tailship_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_tailship_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_tailship_using_subcommand
    set -l cmd (__fish_tailship_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c tailship -n "__fish_tailship_needs_command" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_needs_command" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_needs_command" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_needs_command" -s V -l version -d 'Print version'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "run" -d 'Run the agent: tail the configured sources and ship every line'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "check" -d 'Validate a config file and print the effective config, secrets redacted'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "cloud" -d 'Cloud management API: access policies, tokens, stacks; `cloud setup` for a ready config'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "admin" -d 'Tenant admin API: tenants of a metrics cluster and their limits'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "receive" -d 'Run the embedded log store: push, query, labels and the alert webhook, in memory'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "push" -d 'Ship files or stdin once; exit 0 when every line is acknowledged'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "query" -d 'Query logs over a time range (paging as needed), or a metric at one instant'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "instant-query" -d 'A metric query at one instant (`query --instant`, as logcli has it)'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "tail" -d 'Follow new lines of a query until Ctrl-C'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "labels" -d 'List label names, or the values of one label'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "series" -d 'List the label sets (streams) that match a selector, as logcli\'s `series`'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "demo" -d 'See it work: embedded store, agent, generated log and a live view, for about 20s'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "alert" -d 'Alert rules: `alert test` sends a test alert and its resolve through each webhook'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "top" -d 'A live terminal view of a running agent (its /status.json): files by lag, throughput, pushes'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "convert" -d 'Convert another agent\'s config: `convert promtail FILE` prints a tailship config'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "inspect" -d 'Show what a config\'s stages do to each line of files or stdin, stage by stage; nothing is sent'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "man" -d 'Print the man page (roff) to stdout: `tailship man | man -l -`'
complete -c tailship -n "__fish_tailship_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand run" -s c -l config -d 'The config file (TOML, or YAML by extension) [default: /etc/tailship/tailship.toml, where the Debian package puts it]' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand run" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand run" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand run" -l fresh-positions -d 'Start without the positions file if it exists but cannot be read or is corrupt (without this, `run` exits 2 naming it): it is moved aside to `<path>.corrupt` and files are read again per `start_at`. Once; the config key is `positions.on_unreadable = "start_fresh"`'
complete -c tailship -n "__fish_tailship_using_subcommand run" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand check" -s c -l config -d 'The config file (TOML, or YAML by extension) [default: /etc/tailship/tailship.toml, as for `run`]' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand check" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand check" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand check" -s q -l quiet -d 'Print nothing when the config is valid: only its problems (on stderr) and the exit code'
complete -c tailship -n "__fish_tailship_using_subcommand check" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -l cloud-url -d 'Base address of the cloud management API' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -l token-file -d 'File holding the cloud access policy token (or set TAILSHIP_CLOUD_TOKEN to the token itself)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -l output -d 'Output format' -r -f -a "table\t'Aligned columns for people'
json\t'The service\'s JSON, for scripts'"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -l pace-per-hour -d 'Average access policy calls per hour (the service allows 600)' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -l pace-burst -d 'Access policy calls allowed at once before pacing starts' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -l retry-min-backoff -d 'First wait before retrying a 429 (doubles each time)' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -f -a "policies" -d 'Access policies: what a token may do, where'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -f -a "tokens" -d 'Tokens of access policies'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -f -a "stacks" -d 'Stacks (hosted instances) of an org'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -f -a "setup" -d 'Create a logs:write policy and token for a stack and write a ready agent config'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and not __fish_seen_subcommand_from policies tokens stacks setup help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -l cloud-url -d 'Base address of the cloud management API' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -l token-file -d 'File holding the cloud access policy token (or set TAILSHIP_CLOUD_TOKEN to the token itself)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -l output -d 'Output format' -r -f -a "table\t'Aligned columns for people'
json\t'The service\'s JSON, for scripts'"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -l pace-per-hour -d 'Average access policy calls per hour (the service allows 600)' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -l pace-burst -d 'Access policy calls allowed at once before pacing starts' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -l retry-min-backoff -d 'First wait before retrying a 429 (doubles each time)' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -f -a "create" -d 'Create an access policy'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -f -a "list" -d 'List access policies (every page unless --limit)'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -f -a "get" -d 'Show one access policy'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -f -a "update" -d 'Update an access policy; members not given are sent back as they are'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -f -a "delete" -d 'Delete an access policy'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from policies" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -l cloud-url -d 'Base address of the cloud management API' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -l token-file -d 'File holding the cloud access policy token (or set TAILSHIP_CLOUD_TOKEN to the token itself)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -l output -d 'Output format' -r -f -a "table\t'Aligned columns for people'
json\t'The service\'s JSON, for scripts'"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -l pace-per-hour -d 'Average access policy calls per hour (the service allows 600)' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -l pace-burst -d 'Access policy calls allowed at once before pacing starts' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -l retry-min-backoff -d 'First wait before retrying a 429 (doubles each time)' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -f -a "create" -d 'Create a token; its secret is printed once'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -f -a "list" -d 'List tokens (every page unless --limit)'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -f -a "get" -d 'Show one token (never its secret)'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -f -a "update" -d 'Update a token\'s display name or expiry'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -f -a "delete" -d 'Delete a token'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from tokens" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -l cloud-url -d 'Base address of the cloud management API' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -l token-file -d 'File holding the cloud access policy token (or set TAILSHIP_CLOUD_TOKEN to the token itself)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -l output -d 'Output format' -r -f -a "table\t'Aligned columns for people'
json\t'The service\'s JSON, for scripts'"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -l pace-per-hour -d 'Average access policy calls per hour (the service allows 600)' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -l pace-burst -d 'Access policy calls allowed at once before pacing starts' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -l retry-min-backoff -d 'First wait before retrying a 429 (doubles each time)' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -f -a "list" -d 'List the stacks of an org'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -f -a "create" -d 'Create a stack (lowercase only)'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -f -a "update" -d 'Update a stack. --label gives the complete label set: labels not listed are removed by the API, unless --org is given to merge with the current ones'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -f -a "delete" -d 'Delete a stack (refused while delete protection is on)'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -f -a "connections" -d 'Show a stack\'s connectivity info'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from stacks" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l org -d 'The org (slug) that owns the stack and the new access policy' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l stack -d 'The stack\'s slug' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l region -d 'Region of the policy and token; the stack\'s region when not given' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l write-config -d 'Write the config to this file instead of printing it' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l token-out -d 'Where the token goes (mode 0600); default `<stack>-token` beside the config (or here)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l include -d 'Globs of the config\'s file source' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l cloud-url -d 'Base address of the cloud management API' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l token-file -d 'File holding the cloud access policy token (or set TAILSHIP_CLOUD_TOKEN to the token itself)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l output -d 'Output format' -r -f -a "table\t'Aligned columns for people'
json\t'The service\'s JSON, for scripts'"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l pace-per-hour -d 'Average access policy calls per hour (the service allows 600)' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l pace-burst -d 'Access policy calls allowed at once before pacing starts' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l retry-min-backoff -d 'First wait before retrying a 429 (doubles each time)' -r
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -l force -d 'Overwrite existing config and token files'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from setup" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from help" -f -a "policies" -d 'Access policies: what a token may do, where'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from help" -f -a "tokens" -d 'Tokens of access policies'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from help" -f -a "stacks" -d 'Stacks (hosted instances) of an org'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from help" -f -a "setup" -d 'Create a logs:write policy and token for a stack and write a ready agent config'
complete -c tailship -n "__fish_tailship_using_subcommand cloud; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand admin; and not __fish_seen_subcommand_from tenants help" -l admin-url -d 'Base address of the admin API (`{admin_url}`; `/admin/api/v2` is added)' -r
complete -c tailship -n "__fish_tailship_using_subcommand admin; and not __fish_seen_subcommand_from tenants help" -l admin-token-file -d 'File holding the admin API token (or set TAILSHIP_ADMIN_TOKEN to the token itself)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand admin; and not __fish_seen_subcommand_from tenants help" -l output -d 'Output format' -r -f -a "table\t'Aligned columns for people'
json\t'The service\'s JSON, for scripts'"
complete -c tailship -n "__fish_tailship_using_subcommand admin; and not __fish_seen_subcommand_from tenants help" -l retry-min-backoff -d 'First wait before retrying a 429 (doubles each time)' -r
complete -c tailship -n "__fish_tailship_using_subcommand admin; and not __fish_seen_subcommand_from tenants help" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand admin; and not __fish_seen_subcommand_from tenants help" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand admin; and not __fish_seen_subcommand_from tenants help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tailship -n "__fish_tailship_using_subcommand admin; and not __fish_seen_subcommand_from tenants help" -f -a "tenants" -d 'Tenants of a metrics cluster and their limits'
complete -c tailship -n "__fish_tailship_using_subcommand admin; and not __fish_seen_subcommand_from tenants help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from tenants" -l admin-url -d 'Base address of the admin API (`{admin_url}`; `/admin/api/v2` is added)' -r
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from tenants" -l admin-token-file -d 'File holding the admin API token (or set TAILSHIP_ADMIN_TOKEN to the token itself)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from tenants" -l output -d 'Output format' -r -f -a "table\t'Aligned columns for people'
json\t'The service\'s JSON, for scripts'"
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from tenants" -l retry-min-backoff -d 'First wait before retrying a 429 (doubles each time)' -r
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from tenants" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from tenants" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from tenants" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from tenants" -f -a "get" -d 'Show a tenant with all seven limits'
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from tenants" -f -a "create" -d 'Create a tenant; limits not given are filled from the global defaults'
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from tenants" -f -a "update" -d 'Update a tenant. Its limits are read and sent back, unless --clear-limits'
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from tenants" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from help" -f -a "tenants" -d 'Tenants of a metrics cluster and their limits'
complete -c tailship -n "__fish_tailship_using_subcommand admin; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l listen -d 'Address to listen on; port 0 picks a free port (printed on start)' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l api-prefix -d 'Path prefix of the log API' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l store -d '`memory` keeps entries (bounded by --max-entries); `null` validates and counts only' -r -f -a "memory\t'Keep entries in memory, bounded by `max_entries`'
null\t'Validate and count, keep nothing'"
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l max-entries -d 'Most entries the memory store keeps; the oldest are evicted and counted' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l max-bytes -d 'Most line bytes the memory store keeps (such as 1GiB); the oldest entries are evicted and counted' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l max-query-bytes -d 'Largest answer of one range query in line bytes; paging clients go on from its last entry' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l max-body -d 'Largest request body, also after decompression (such as 16MiB)' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l max-query-limit -d 'Largest `limit` a range query may ask for' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l max-connections -d 'Most connections open at once; more wait in the kernel\'s queue' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l header-read-timeout -d 'A client must send a whole request header within this (also the idle timeout between requests)' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l basic-auth-user -d 'Require HTTP basic auth with this user (except on the webhook and /stats)' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l basic-auth-password-file -d 'File holding the basic-auth password' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l webhook-key -d 'Accept only this webhook integration key (repeatable); others get 403' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l fail-every -d 'Fault injection: every Nth push request fails with --fail-status and is not stored' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l fail-first -d 'Fault injection: the first N push requests fail with --fail-status' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l fail-status -d 'Status of injected failures' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l retry-after -d 'Retry-After seconds sent with injected failures' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l latency -d 'Delay added before answering each push, such as 50ms' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l answer-after-store -d 'Delay after storing each push and before answering it, such as 1s (a lost acknowledgement when the sender stops meanwhile)' -r
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand receive" -l multi-tenant -d 'Require X-Scope-OrgID on the log API and keep data per tenant'
complete -c tailship -n "__fish_tailship_using_subcommand receive" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tailship -n "__fish_tailship_using_subcommand push" -s l -l label -d 'A label for every line, NAME=VALUE (repeatable). `host` and `filename` are added' -r
complete -c tailship -n "__fish_tailship_using_subcommand push" -l max-retries -d 'Retries of each batch before its lines are given up (exit 1 naming the last error); 0 retries for ever. Overrides `client.retry.max_retries`' -r
complete -c tailship -n "__fish_tailship_using_subcommand push" -l give-up-after -d 'Stop retrying after this long in all (such as 30s): exit 1 naming the last error and how many lines were acknowledged. Default: never' -r
complete -c tailship -n "__fish_tailship_using_subcommand push" -l url -l addr -d 'Base URL of the log service (or a full push URL; `--addr` as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand push" -l api-prefix -d 'Path prefix of the log API: /logstore/api/v1 (the spec\'s) or /loki/api/v1 (Loki); unset, the service is asked' -r
complete -c tailship -n "__fish_tailship_using_subcommand push" -l org-id -d 'Tenant sent as X-Scope-OrgID (`a|b` queries several tenants)' -r
complete -c tailship -n "__fish_tailship_using_subcommand push" -l username -d 'User for HTTP basic auth' -r
complete -c tailship -n "__fish_tailship_using_subcommand push" -l password-file -d 'File holding the basic-auth password or API token' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand push" -l password -d 'The basic-auth password itself (as logcli has it; --password-file keeps it out of `ps`)' -r
complete -c tailship -n "__fish_tailship_using_subcommand push" -l bearer-token-file -d 'File holding a bearer token' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand push" -l bearer-token -d 'A bearer token itself (as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand push" -l ca-file -l ca-cert -d 'PEM file of CA certificates to trust (`--ca-cert` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand push" -l cert-file -l cert -d 'Client certificate (PEM) for mutual TLS; needs --key-file (`--cert` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand push" -l key-file -l key -d 'Private key (PEM) of --cert-file (`--key` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand push" -l proxy-url -d 'HTTP(S) proxy for the requests; without it HTTPS_PROXY, HTTP_PROXY and NO_PROXY apply' -r
complete -c tailship -n "__fish_tailship_using_subcommand push" -l timeout -d 'Request timeout, such as 10s' -r
complete -c tailship -n "__fish_tailship_using_subcommand push" -s c -l config -d 'Take connection settings from the `client` section of this config file' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand push" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand push" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand push" -s q -l quiet -d 'No progress bar, even on a terminal'
complete -c tailship -n "__fish_tailship_using_subcommand push" -l insecure-skip-verify -l tls-skip-verify -d 'Accept any TLS certificate (self-signed test setups only; `--tls-skip-verify` as logcli has it)'
complete -c tailship -n "__fish_tailship_using_subcommand push" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand query" -l time -d 'The instant of --instant: RFC 3339, Unix nanoseconds, or an age such as 5m (default: now)' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l since -d 'How far before --to (default: now) the range starts, such as 15m or 2h [default: 1h]' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l from -d 'Start of the range: RFC 3339, Unix nanoseconds, or an age such as 2h' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l to -d 'End of the range (exclusive), same forms as --from [default: now]' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l limit -d 'Most entries to print; 0 prints every entry in the range' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l direction -d 'Newest first (backward) or oldest first (forward)' -r -f -a "forward\t'Oldest first'
backward\t'Newest first (the service\'s default)'"
complete -c tailship -n "__fish_tailship_using_subcommand query" -s z -l timezone -d 'Time zone of printed times: UTC or Local (the TZ environment variable, else /etc/localtime)' -r -f -a "UTC\t'Coordinated Universal Time (Z)'
Local\t'The local zone: TZ, else /etc/localtime'"
complete -c tailship -n "__fish_tailship_using_subcommand query" -l exclude-label -d 'Labels left out of the printed label sets (repeatable)' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -s o -l output -r -f -a "default\t'Time, labels and line (coloured on a terminal)'
raw\t'The line alone'
jsonl\t'One JSON object per entry'"
complete -c tailship -n "__fish_tailship_using_subcommand query" -l step -d 'A metric query over a range: time between its points, such as 1m [default: the range / 250, at least 1s]' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l batch -d 'Entries per request when paging' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l url -l addr -d 'Base URL of the log service (or a full push URL; `--addr` as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l api-prefix -d 'Path prefix of the log API: /logstore/api/v1 (the spec\'s) or /loki/api/v1 (Loki); unset, the service is asked' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l org-id -d 'Tenant sent as X-Scope-OrgID (`a|b` queries several tenants)' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l username -d 'User for HTTP basic auth' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l password-file -d 'File holding the basic-auth password or API token' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand query" -l password -d 'The basic-auth password itself (as logcli has it; --password-file keeps it out of `ps`)' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l bearer-token-file -d 'File holding a bearer token' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand query" -l bearer-token -d 'A bearer token itself (as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l ca-file -l ca-cert -d 'PEM file of CA certificates to trust (`--ca-cert` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand query" -l cert-file -l cert -d 'Client certificate (PEM) for mutual TLS; needs --key-file (`--cert` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand query" -l key-file -l key -d 'Private key (PEM) of --cert-file (`--key` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand query" -l proxy-url -d 'HTTP(S) proxy for the requests; without it HTTPS_PROXY, HTTP_PROXY and NO_PROXY apply' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -l timeout -d 'Request timeout, such as 10s' -r
complete -c tailship -n "__fish_tailship_using_subcommand query" -s c -l config -d 'Take connection settings from the `client` section of this config file' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand query" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand query" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand query" -l instant -d 'Run a metric query at one instant (--time) instead of a range query'
complete -c tailship -n "__fish_tailship_using_subcommand query" -l forward -d 'Oldest first: the same as --direction forward (as logcli has it)'
complete -c tailship -n "__fish_tailship_using_subcommand query" -s t -l tail -d 'Follow new lines, as `tailship tail` (logcli\'s `query --tail`)'
complete -c tailship -n "__fish_tailship_using_subcommand query" -l no-labels -d 'Leave the labels out of the default output'
complete -c tailship -n "__fish_tailship_using_subcommand query" -s q -l quiet -d 'Nothing on stderr but errors (no retry warnings), as logcli\'s --quiet; RUST_LOG still wins'
complete -c tailship -n "__fish_tailship_using_subcommand query" -l insecure-skip-verify -l tls-skip-verify -d 'Accept any TLS certificate (self-signed test setups only; `--tls-skip-verify` as logcli has it)'
complete -c tailship -n "__fish_tailship_using_subcommand query" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l time -l now -d 'The instant: RFC 3339, Unix nanoseconds, or an age such as 5m (default: now; `--now` as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -s o -l output -r -f -a "default\t'Time, labels and line (coloured on a terminal)'
raw\t'The line alone'
jsonl\t'One JSON object per entry'"
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l url -l addr -d 'Base URL of the log service (or a full push URL; `--addr` as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l api-prefix -d 'Path prefix of the log API: /logstore/api/v1 (the spec\'s) or /loki/api/v1 (Loki); unset, the service is asked' -r
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l org-id -d 'Tenant sent as X-Scope-OrgID (`a|b` queries several tenants)' -r
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l username -d 'User for HTTP basic auth' -r
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l password-file -d 'File holding the basic-auth password or API token' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l password -d 'The basic-auth password itself (as logcli has it; --password-file keeps it out of `ps`)' -r
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l bearer-token-file -d 'File holding a bearer token' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l bearer-token -d 'A bearer token itself (as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l ca-file -l ca-cert -d 'PEM file of CA certificates to trust (`--ca-cert` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l cert-file -l cert -d 'Client certificate (PEM) for mutual TLS; needs --key-file (`--cert` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l key-file -l key -d 'Private key (PEM) of --cert-file (`--key` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l proxy-url -d 'HTTP(S) proxy for the requests; without it HTTPS_PROXY, HTTP_PROXY and NO_PROXY apply' -r
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l timeout -d 'Request timeout, such as 10s' -r
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -s c -l config -d 'Take connection settings from the `client` section of this config file' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -s q -l quiet -d 'Nothing on stderr but errors (no retry warnings), as logcli\'s --quiet; RUST_LOG still wins'
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -l insecure-skip-verify -l tls-skip-verify -d 'Accept any TLS certificate (self-signed test setups only; `--tls-skip-verify` as logcli has it)'
complete -c tailship -n "__fish_tailship_using_subcommand instant-query" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l since -d 'Also print lines this far back before following, such as 5m' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l delay -d 'How far behind now each poll ends. Each poll also looks 10s further back again, so a line stored up to that late still shows (once)' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l interval -d 'Wait between polls' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l batch -d 'Entries per request' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -s z -l timezone -d 'Time zone of printed times: UTC or Local (the TZ environment variable, else /etc/localtime)' -r -f -a "UTC\t'Coordinated Universal Time (Z)'
Local\t'The local zone: TZ, else /etc/localtime'"
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l exclude-label -d 'Labels left out of the printed label sets (repeatable)' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -s o -l output -r -f -a "default\t'Time, labels and line (coloured on a terminal)'
raw\t'The line alone'
jsonl\t'One JSON object per entry'"
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l url -l addr -d 'Base URL of the log service (or a full push URL; `--addr` as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l api-prefix -d 'Path prefix of the log API: /logstore/api/v1 (the spec\'s) or /loki/api/v1 (Loki); unset, the service is asked' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l org-id -d 'Tenant sent as X-Scope-OrgID (`a|b` queries several tenants)' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l username -d 'User for HTTP basic auth' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l password-file -d 'File holding the basic-auth password or API token' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l password -d 'The basic-auth password itself (as logcli has it; --password-file keeps it out of `ps`)' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l bearer-token-file -d 'File holding a bearer token' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l bearer-token -d 'A bearer token itself (as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l ca-file -l ca-cert -d 'PEM file of CA certificates to trust (`--ca-cert` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l cert-file -l cert -d 'Client certificate (PEM) for mutual TLS; needs --key-file (`--cert` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l key-file -l key -d 'Private key (PEM) of --cert-file (`--key` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l proxy-url -d 'HTTP(S) proxy for the requests; without it HTTPS_PROXY, HTTP_PROXY and NO_PROXY apply' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l timeout -d 'Request timeout, such as 10s' -r
complete -c tailship -n "__fish_tailship_using_subcommand tail" -s c -l config -d 'Take connection settings from the `client` section of this config file' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l no-labels -d 'Leave the labels out of the default output'
complete -c tailship -n "__fish_tailship_using_subcommand tail" -s q -l quiet -d 'Nothing on stderr but errors (no retry warnings), as logcli\'s --quiet; RUST_LOG still wins'
complete -c tailship -n "__fish_tailship_using_subcommand tail" -l insecure-skip-verify -l tls-skip-verify -d 'Accept any TLS certificate (self-signed test setups only; `--tls-skip-verify` as logcli has it)'
complete -c tailship -n "__fish_tailship_using_subcommand tail" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l since -d 'Only labels of entries this recent, such as 24h [default: the service\'s, often 6h]' -r
complete -c tailship -n "__fish_tailship_using_subcommand labels" -s o -l output -d '`default` or `raw`: one name per line; `jsonl`: one JSON string per line' -r -f -a "default\t'Time, labels and line (coloured on a terminal)'
raw\t'The line alone'
jsonl\t'One JSON object per entry'"
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l url -l addr -d 'Base URL of the log service (or a full push URL; `--addr` as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l api-prefix -d 'Path prefix of the log API: /logstore/api/v1 (the spec\'s) or /loki/api/v1 (Loki); unset, the service is asked' -r
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l org-id -d 'Tenant sent as X-Scope-OrgID (`a|b` queries several tenants)' -r
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l username -d 'User for HTTP basic auth' -r
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l password-file -d 'File holding the basic-auth password or API token' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l password -d 'The basic-auth password itself (as logcli has it; --password-file keeps it out of `ps`)' -r
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l bearer-token-file -d 'File holding a bearer token' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l bearer-token -d 'A bearer token itself (as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l ca-file -l ca-cert -d 'PEM file of CA certificates to trust (`--ca-cert` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l cert-file -l cert -d 'Client certificate (PEM) for mutual TLS; needs --key-file (`--cert` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l key-file -l key -d 'Private key (PEM) of --cert-file (`--key` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l proxy-url -d 'HTTP(S) proxy for the requests; without it HTTPS_PROXY, HTTP_PROXY and NO_PROXY apply' -r
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l timeout -d 'Request timeout, such as 10s' -r
complete -c tailship -n "__fish_tailship_using_subcommand labels" -s c -l config -d 'Take connection settings from the `client` section of this config file' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand labels" -s q -l quiet -d 'Nothing on stderr but errors (no retry warnings), as logcli\'s --quiet; RUST_LOG still wins'
complete -c tailship -n "__fish_tailship_using_subcommand labels" -l insecure-skip-verify -l tls-skip-verify -d 'Accept any TLS certificate (self-signed test setups only; `--tls-skip-verify` as logcli has it)'
complete -c tailship -n "__fish_tailship_using_subcommand labels" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand series" -l from -d 'Start of the range: RFC 3339, Unix nanoseconds, or an age such as 2h' -r
complete -c tailship -n "__fish_tailship_using_subcommand series" -s o -l output -d '`default` or `raw`: one label set per line; `jsonl`: one JSON object per line' -r -f -a "default\t'Time, labels and line (coloured on a terminal)'
raw\t'The line alone'
jsonl\t'One JSON object per entry'"
complete -c tailship -n "__fish_tailship_using_subcommand series" -l url -l addr -d 'Base URL of the log service (or a full push URL; `--addr` as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand series" -l api-prefix -d 'Path prefix of the log API: /logstore/api/v1 (the spec\'s) or /loki/api/v1 (Loki); unset, the service is asked' -r
complete -c tailship -n "__fish_tailship_using_subcommand series" -l org-id -d 'Tenant sent as X-Scope-OrgID (`a|b` queries several tenants)' -r
complete -c tailship -n "__fish_tailship_using_subcommand series" -l username -d 'User for HTTP basic auth' -r
complete -c tailship -n "__fish_tailship_using_subcommand series" -l password-file -d 'File holding the basic-auth password or API token' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand series" -l password -d 'The basic-auth password itself (as logcli has it; --password-file keeps it out of `ps`)' -r
complete -c tailship -n "__fish_tailship_using_subcommand series" -l bearer-token-file -d 'File holding a bearer token' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand series" -l bearer-token -d 'A bearer token itself (as logcli has it)' -r
complete -c tailship -n "__fish_tailship_using_subcommand series" -l ca-file -l ca-cert -d 'PEM file of CA certificates to trust (`--ca-cert` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand series" -l cert-file -l cert -d 'Client certificate (PEM) for mutual TLS; needs --key-file (`--cert` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand series" -l key-file -l key -d 'Private key (PEM) of --cert-file (`--key` as logcli has it)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand series" -l proxy-url -d 'HTTP(S) proxy for the requests; without it HTTPS_PROXY, HTTP_PROXY and NO_PROXY apply' -r
complete -c tailship -n "__fish_tailship_using_subcommand series" -l timeout -d 'Request timeout, such as 10s' -r
complete -c tailship -n "__fish_tailship_using_subcommand series" -s c -l config -d 'Take connection settings from the `client` section of this config file' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand series" -l since -d 'How far back from now, such as 1h [default: 1h]' -r
complete -c tailship -n "__fish_tailship_using_subcommand series" -l to -d 'End of the range, same forms as --from [default: now]' -r
complete -c tailship -n "__fish_tailship_using_subcommand series" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand series" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand series" -s q -l quiet -d 'Nothing on stderr but errors (no retry warnings), as logcli\'s --quiet; RUST_LOG still wins'
complete -c tailship -n "__fish_tailship_using_subcommand series" -l insecure-skip-verify -l tls-skip-verify -d 'Accept any TLS certificate (self-signed test setups only; `--tls-skip-verify` as logcli has it)'
complete -c tailship -n "__fish_tailship_using_subcommand series" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tailship -n "__fish_tailship_using_subcommand demo" -l duration -d 'How long the demo runs' -r
complete -c tailship -n "__fish_tailship_using_subcommand demo" -l rate -d 'Log entries written per second' -r
complete -c tailship -n "__fish_tailship_using_subcommand demo" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand demo" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand demo" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand alert; and not __fish_seen_subcommand_from test help" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand alert; and not __fish_seen_subcommand_from test help" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand alert; and not __fish_seen_subcommand_from test help" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand alert; and not __fish_seen_subcommand_from test help" -f -a "test" -d 'Send a test alert and its resolve through the configured webhook(s) and show what the service answered'
complete -c tailship -n "__fish_tailship_using_subcommand alert; and not __fish_seen_subcommand_from test help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand alert; and __fish_seen_subcommand_from test" -s c -l config -d 'The config file (TOML, or YAML by extension)' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand alert; and __fish_seen_subcommand_from test" -l rule -d 'Only this rule (default: every rule)' -r
complete -c tailship -n "__fish_tailship_using_subcommand alert; and __fish_seen_subcommand_from test" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand alert; and __fish_seen_subcommand_from test" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand alert; and __fish_seen_subcommand_from test" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand alert; and __fish_seen_subcommand_from help" -f -a "test" -d 'Send a test alert and its resolve through the configured webhook(s) and show what the service answered'
complete -c tailship -n "__fish_tailship_using_subcommand alert; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand top" -l url -d 'The agent\'s endpoint (`server.listen`), or its full /status.json URL' -r
complete -c tailship -n "__fish_tailship_using_subcommand top" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand top" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand top" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand convert; and not __fish_seen_subcommand_from promtail help" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand convert; and not __fish_seen_subcommand_from promtail help" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand convert; and not __fish_seen_subcommand_from promtail help" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand convert; and not __fish_seen_subcommand_from promtail help" -f -a "promtail" -d 'Print the tailship config (TOML) equivalent to a Promtail config on stdout; what has no equivalent is listed on stderr, numbered, by its Promtail key. Exit 2 on unreadable or invalid YAML'
complete -c tailship -n "__fish_tailship_using_subcommand convert; and not __fish_seen_subcommand_from promtail help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand convert; and __fish_seen_subcommand_from promtail" -l positions -d 'Promtail\'s positions file (its `positions.filename`): written as tailship\'s positions file (each path\'s offset, with its fingerprint read now), so shipping goes on where Promtail stopped; files it cannot carry over are listed on stderr' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand convert; and __fish_seen_subcommand_from promtail" -l positions-out -d 'Where tailship\'s positions file is written, and the converted config\'s positions.path [default: /var/lib/tailship/positions.json, which the packaged service may write]. Written by root into a directory another user owns, the file is given to that user' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand convert; and __fish_seen_subcommand_from promtail" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand convert; and __fish_seen_subcommand_from promtail" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand convert; and __fish_seen_subcommand_from promtail" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand convert; and __fish_seen_subcommand_from help" -f -a "promtail" -d 'Print the tailship config (TOML) equivalent to a Promtail config on stdout; what has no equivalent is listed on stderr, numbered, by its Promtail key. Exit 2 on unreadable or invalid YAML'
complete -c tailship -n "__fish_tailship_using_subcommand convert; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand inspect" -s c -l config -d 'The config whose stages run (TOML, or YAML by extension) [default: /etc/tailship/tailship.toml]' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand inspect" -l promtail -d 'A Promtail config instead, converted in memory as `convert promtail` converts it' -r -F
complete -c tailship -n "__fish_tailship_using_subcommand inspect" -l source -d 'The source (a Promtail config\'s job) whose stages run [default: for each file, the file source whose globs match it (stdin: a stdin source), else the first source]' -r
complete -c tailship -n "__fish_tailship_using_subcommand inspect" -s o -l output -d '`text` for people, `json` for one JSON object per event (line, stage, sent, dropped)' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand inspect" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand inspect" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand inspect" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand completions" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand completions" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand completions" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand man" -l log-format -d 'Log format on stderr: human text, or one JSON object per line for collectors' -r -f -a "text\t''
json\t''"
complete -c tailship -n "__fish_tailship_using_subcommand man" -l log-level -d 'Log level on stderr (over RUST_LOG, which also takes per-module directives)' -r -f -a "error\t''
warn\t''
info\t''
debug\t''
trace\t''"
complete -c tailship -n "__fish_tailship_using_subcommand man" -s h -l help -d 'Print help'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "run" -d 'Run the agent: tail the configured sources and ship every line'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "check" -d 'Validate a config file and print the effective config, secrets redacted'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "cloud" -d 'Cloud management API: access policies, tokens, stacks; `cloud setup` for a ready config'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "admin" -d 'Tenant admin API: tenants of a metrics cluster and their limits'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "receive" -d 'Run the embedded log store: push, query, labels and the alert webhook, in memory'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "push" -d 'Ship files or stdin once; exit 0 when every line is acknowledged'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "query" -d 'Query logs over a time range (paging as needed), or a metric at one instant'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "instant-query" -d 'A metric query at one instant (`query --instant`, as logcli has it)'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "tail" -d 'Follow new lines of a query until Ctrl-C'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "labels" -d 'List label names, or the values of one label'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "series" -d 'List the label sets (streams) that match a selector, as logcli\'s `series`'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "demo" -d 'See it work: embedded store, agent, generated log and a live view, for about 20s'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "alert" -d 'Alert rules: `alert test` sends a test alert and its resolve through each webhook'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "top" -d 'A live terminal view of a running agent (its /status.json): files by lag, throughput, pushes'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "convert" -d 'Convert another agent\'s config: `convert promtail FILE` prints a tailship config'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "inspect" -d 'Show what a config\'s stages do to each line of files or stdin, stage by stage; nothing is sent'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "man" -d 'Print the man page (roff) to stdout: `tailship man | man -l -`'
complete -c tailship -n "__fish_tailship_using_subcommand help; and not __fish_seen_subcommand_from run check cloud admin receive push query instant-query tail labels series demo alert top convert inspect completions man help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c tailship -n "__fish_tailship_using_subcommand help; and __fish_seen_subcommand_from cloud" -f -a "policies" -d 'Access policies: what a token may do, where'
complete -c tailship -n "__fish_tailship_using_subcommand help; and __fish_seen_subcommand_from cloud" -f -a "tokens" -d 'Tokens of access policies'
complete -c tailship -n "__fish_tailship_using_subcommand help; and __fish_seen_subcommand_from cloud" -f -a "stacks" -d 'Stacks (hosted instances) of an org'
complete -c tailship -n "__fish_tailship_using_subcommand help; and __fish_seen_subcommand_from cloud" -f -a "setup" -d 'Create a logs:write policy and token for a stack and write a ready agent config'
complete -c tailship -n "__fish_tailship_using_subcommand help; and __fish_seen_subcommand_from admin" -f -a "tenants" -d 'Tenants of a metrics cluster and their limits'
complete -c tailship -n "__fish_tailship_using_subcommand help; and __fish_seen_subcommand_from alert" -f -a "test" -d 'Send a test alert and its resolve through the configured webhook(s) and show what the service answered'
complete -c tailship -n "__fish_tailship_using_subcommand help; and __fish_seen_subcommand_from convert" -f -a "promtail" -d 'Print the tailship config (TOML) equivalent to a Promtail config on stdout; what has no equivalent is listed on stderr, numbered, by its Promtail key. Exit 2 on unreadable or invalid YAML'
