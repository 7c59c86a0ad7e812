"""Name formats of k8s.io/apimachinery validation (the `+k8s:format=` vocabulary)."""
from __future__ import annotations

import re

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE = _QUALIFIED_NAME


def dns_label(value: str) -> str | None:
    """`k8s-short-name`: returns the problem, or None when valid."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _DNS1123_LABEL.match(value):
        return ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                "and must start and end with an alphanumeric character")
    return None


def dns_subdomain(value: str) -> str | None:
    """`k8s-long-name`."""
    if len(value) > 253:
        return "must be no more than 253 characters"
    if not _DNS1123_SUBDOMAIN.match(value):
        return ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character")
    return None


def path_segment_name(value: str) -> str | None:
    """`k8s-path-segment-name`."""
    if value in (".", ".."):
        return f"may not be '{value}'"
    for bad in ("/", "%"):
        if bad in value:
            return f"may not contain '{bad}'"
    return None


def qualified_name(value: str) -> str | None:
    """`k8s-label-key`: an optional DNS-subdomain prefix and '/', then a name of at most 63."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return "prefix part must be non-empty"
        problem = dns_subdomain(prefix)
        if problem:
            return "prefix part " + problem
    else:
        return ("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character")
    return None


def label_value(value: str) -> str | None:
    if len(value) > 63:
        return "must be no more than 63 characters"
    if value and not _LABEL_VALUE.match(value):
        return ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character")
    return None
