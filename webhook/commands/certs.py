"""`workload-webhook certs`: `generate` a development CA and serving certificate
(never over files already there without --force), `inspect` a certificate file.
Exit codes: 0 done, 2 usage, or a file to inspect that is not there, cannot be read or
holds anything but PEM certificates (an input error, as `--ca-bundle` and `--ca-dir` are)."""
from __future__ import annotations

import argparse
import datetime as dt
import ipaddress
import os
import sys

from webhook.command_input import EXIT_OK, EXIT_USAGE, at_least


def ip_address(text: str) -> str:
    """argparse type of --ip."""
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an IP address: {text!r}") from None


def add_parser(subparsers) -> argparse.ArgumentParser:
    c = subparsers.add_parser("certs", help="generate or inspect certificates")
    csub = c.add_subparsers(dest="certs_command", required=True)
    cg = csub.add_parser("generate", help="write ca.crt/ca.key and tls.crt/tls.key; prints the CA path")
    cg.add_argument("--out", required=True, metavar="DIR")
    cg.add_argument("--dns", action="append", metavar="NAME", help="SAN DNS name; repeatable")
    cg.add_argument("--ip", action="append", type=ip_address, metavar="ADDR", help="SAN IP address; repeatable")
    cg.add_argument("--ca-dir", metavar="DIR", help="sign with the CA in DIR instead of a new one")
    cg.add_argument("--days", type=at_least(1), default=90, metavar="N",
                    help="the serving certificate's validity in days; default 90")
    cg.add_argument("--ca-days", type=at_least(1), default=None, metavar="N",
                    help="a new CA's validity in days; default 365")
    cg.add_argument("--force", action="store_true", help="replace certificates and keys already in --out")
    ci = csub.add_parser("inspect", help="print each certificate's subject, issuer, validity (days left), key type, "
                                         "SHA-256 fingerprint and SANs")
    ci.add_argument("file")
    c.set_defaults(func=run)
    return c


def run(args: argparse.Namespace) -> int:
    from webhook.certificates import pem
    if args.certs_command == "generate":
        return _certs_generate(args)
    try:
        print(pem.describe(args.file))
    except (OSError, ValueError) as exc:        # unreadable; not PEM certificates (pem.BundleError)
        print(f"error: {args.file}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return EXIT_USAGE
    return EXIT_OK


def _certs_generate(args: argparse.Namespace) -> int:
    """A new CA and serving certificate, or a serving certificate from --ca-dir's CA; never
    over files already there without --force (a replaced CA must be trusted anew everywhere)."""
    from webhook.certificates import files as certs
    ca = None
    if args.ca_dir:
        if args.ca_days is not None:
            print("error: --ca-days is for a new CA: not with --ca-dir", file=sys.stderr)
            return EXIT_USAGE
        try:
            ca = certs.load_ca(args.ca_dir)
        except OSError as exc:
            print(f"error: --ca-dir {args.ca_dir}: {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
        except (ValueError, TypeError) as exc:       # not PEM, not a key, an encrypted key
            print(f"error: --ca-dir {args.ca_dir}: the CA does not load: {(str(exc).splitlines() or [''])[0]}",
                  file=sys.stderr)
            return EXIT_USAGE
    ca_validity = dt.timedelta(days=args.ca_days or certs.CA_VALIDITY.days)
    validity = dt.timedelta(days=args.days)
    ca_ends = ca[0].not_valid_after_utc if ca else dt.datetime.now(dt.timezone.utc) + ca_validity
    if dt.datetime.now(dt.timezone.utc) + validity > ca_ends:
        print(f"error: a serving certificate of {args.days} days would outlive its CA (valid until "
              f"{ca_ends:%Y-%m-%d}): give fewer --days" + ("" if ca else " or more --ca-days"), file=sys.stderr)
        return EXIT_USAGE
    there = certs.replaced(args.out, new_ca=ca is None)
    if there and not args.force:
        print(f"error: {', '.join(there)} already exist{'s' if len(there) == 1 else ''}: give --force to replace "
              "them" + (" (a new CA must then be trusted anew: every caBundle)" if ca is None else ""),
              file=sys.stderr)
        return EXIT_USAGE
    paths = certs.generate(args.out, dns_names=tuple(args.dns or certs.DEFAULT_DNS),
                           ips=tuple(args.ip or certs.DEFAULT_IPS), ca=ca, ca_validity=ca_validity, validity=validity)
    print(paths.ca_cert if ca is None else os.path.join(args.ca_dir, certs.CA_CERT))
    return EXIT_OK
