#!/usr/bin/env python3
"""Writes tailship's alert and recording rules for the selector of your agents' scrape.

The agents' own metrics (tailship_*) need no selector: only tailship serves them. `up` does:
TailshipDown must pick the agents' targets out of every target Prometheus scrapes, and that
depends on how it scrapes them. This is the one place to say it:

  python3 rules.py > tailship.rules.yml
      job="tailship": a static or file_sd job named tailship, or the PodMonitor of
      packaging/k8s/overlays/prometheus-operator (its job is the pods' app.kubernetes.io/name)
  python3 rules.py --kubernetes-pods > tailship.rules.kubernetes-pods.yml
      pods scraped by annotation, by the Prometheus Helm chart's `kubernetes-pods` job
      (its labelmap makes the pod label app.kubernetes.io/name app_kubernetes_io_name)
  python3 rules.py --selector 'job="agents",team="logs"'
      anything else

The template is tailship.rules.yml itself (selector job="tailship"); both files in this
directory are its output, and tests/monitoring.rs fails when either is stale."""
import argparse, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = 'job="tailship"'
KUBERNETES_PODS = 'job="kubernetes-pods",app_kubernetes_io_name="tailship"'
MARK = "# Selector of the agents' targets: "


def render(selector):
    text = open(os.path.join(HERE, "tailship.rules.yml")).read()
    old = re.search(re.escape(MARK) + r"(.*)\n", text).group(1)
    if f"up{{{old}}}" not in text:
        sys.exit(f"tailship.rules.yml: `up{{{old}}}` not found")
    return text.replace(f"{MARK}{old}\n", f"{MARK}{selector}\n").replace(f"up{{{old}}}", f"up{{{selector}}}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--selector", help="label matchers of the agents' targets, such as 'job=\"tailship\"'")
    g.add_argument("--kubernetes-pods", action="store_true", help=f"the selector {KUBERNETES_PODS}")
    a = ap.parse_args()
    selector = KUBERNETES_PODS if a.kubernetes_pods else (a.selector or DEFAULT)
    if not re.fullmatch(r'\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"[^"]*"\s*(,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"[^"]*"\s*)*', selector):
        sys.exit(f"--selector {selector!r}: not a list of label matchers such as job=\"tailship\"")
    sys.stdout.write(render(selector))


if __name__ == "__main__":
    main()
