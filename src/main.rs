use clap::Parser;

fn main() {
    let cli = tailship::cli::Cli::parse();
    tailship::logging::init(cli.log_format);
    std::process::exit(tailship::commands::dispatch(cli));
}
