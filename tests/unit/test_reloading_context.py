"""The per-worker SSL context follows tls.crt/tls.key on disk, and a pair that
does not load (a rotation half written: the new certificate before its key)
leaves the previous pair serving until the pair is whole again."""
import ssl

from cryptography import x509

from webhook.certificates import files as certs


def _served_serial(ctx: ssl.SSLContext, ca_file: str) -> int:
    """The serial a handshake with this context presents, over a real TLS session in memory."""
    client = ssl.create_default_context(cafile=ca_file)
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    cli = client.wrap_bio(c_in, c_out, server_hostname="localhost")
    srv = ctx.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        for side in (cli, srv):
            try:
                side.do_handshake()
            except ssl.SSLWantReadError:
                pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
    return x509.load_der_x509_certificate(cli.getpeercert(binary_form=True)).serial_number


def _serial(path) -> int:
    return x509.load_pem_x509_certificate(open(path, "rb").read()).serial_number


def test_half_written_pair_keeps_the_previous_one_until_whole(tmp_path):
    paths = certs.generate(str(tmp_path))
    ctx = certs.ReloadingContext(paths.cert, paths.key, check_interval=0)
    first = _serial(paths.cert)
    assert _served_serial(ctx.get(), paths.ca_cert) == first

    ca = certs.load_ca(str(tmp_path))
    cert, key = certs.make_serving(*ca)
    from cryptography.hazmat.primitives import serialization
    # The new certificate lands first; its key is not there yet.
    certs.write_atomic(paths.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    assert _served_serial(ctx.get(), paths.ca_cert) == first and ctx.reloads == 0
    # The key follows: the pair is whole and the new certificate is served.
    certs.write_atomic(paths.key, certs.pem_key(key), 0o600)
    assert _served_serial(ctx.get(), paths.ca_cert) == cert.serial_number and ctx.reloads == 1


def test_garbage_files_never_replace_a_working_context(tmp_path):
    paths = certs.generate(str(tmp_path))
    ctx = certs.ReloadingContext(paths.cert, paths.key, check_interval=0)
    first = _serial(paths.cert)
    with open(paths.cert, "w") as f:
        f.write("-----BEGIN CERTIFICATE-----\nnot base64\n")
    assert _served_serial(ctx.get(), paths.ca_cert) == first
