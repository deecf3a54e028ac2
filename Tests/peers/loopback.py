"""The one check every test peer makes before it binds: loopback addresses only."""

import ipaddress


def loopback_host(host: str) -> str:
    """Return a loopback IP literal for host, or raise ValueError."""
    if host == "localhost":
        # "localhost" may resolve to both ::1 and 127.0.0.1, which with port 0
        # would bind two different ports; pin it to IPv4.
        return "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        raise ValueError(f"host must be a loopback IP literal or 'localhost', got {host!r}")
    if not ip.is_loopback:
        raise ValueError(f"refusing non-loopback host {host!r}")
    return str(ip)
