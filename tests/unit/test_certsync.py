"""The certificate rotation plan (chart `self` mode): at every step the served
certificate is signed by a CA in the bundle the API server trusts."""
import datetime as dt

from cryptography import x509

from webhook.certificates.secret import Material, Policy, _issued_by, fresh, plan

POLICY = Policy(ca_validity=dt.timedelta(hours=3), leaf_validity=dt.timedelta(hours=1), grace=dt.timedelta(minutes=2))


def served_is_trusted(m: Material) -> bool:
    leaf = x509.load_pem_x509_certificate(m.tls_cert)
    return any(_issued_by(leaf, ca) for ca in x509.load_pem_x509_certificates(m.bundle))


def test_fresh_material_needs_nothing():
    m = fresh(POLICY)
    assert served_is_trusted(m)
    assert plan(m, POLICY, dt.datetime.now(dt.timezone.utc)) is None


def test_leaf_renewed_at_two_thirds_of_its_life():
    m = fresh(POLICY)
    now = dt.datetime.now(dt.timezone.utc)
    assert plan(m, POLICY, now + dt.timedelta(minutes=35)) is None
    step = plan(m, POLICY, now + dt.timedelta(minutes=41))
    assert step and step[1] == "serving certificate renewed"
    assert step[0].tls_cert != m.tls_cert and step[0].bundle == m.bundle and served_is_trusted(step[0])


def test_ca_rotation_keeps_the_served_certificate_trusted_at_every_step():
    m = fresh(POLICY)
    t = dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=125)   # CA past 2/3 of 3h
    stages = []
    for _ in range(10):
        step = plan(m, POLICY, t)
        if step:
            m, what = step
            stages.append(what)
            assert served_is_trusted(m), what
        t += dt.timedelta(minutes=1)
    assert stages == ["new CA added to the bundle", "serving certificate renewed", "old CA removed from the bundle"]
    assert len(x509.load_pem_x509_certificates(m.bundle)) == 1


def test_new_leaf_waits_a_grace_period_after_the_new_ca():
    m = fresh(POLICY)
    t = dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=125)
    m, _ = plan(m, POLICY, t)
    assert len(x509.load_pem_x509_certificates(m.bundle)) == 2
    assert plan(m, POLICY, t + dt.timedelta(seconds=60)) is None       # within the grace period
    assert plan(m, POLICY, t + dt.timedelta(seconds=121))[1] == "serving certificate renewed"


def test_secret_round_trip():
    m = fresh(POLICY)
    assert Material.from_secret(m.secret_data(), m.annotations()) == m
    assert Material.from_secret({"ca.crt": "!!"}, None) is None


def test_leaf_waits_until_the_new_bundle_is_published():
    m = fresh(POLICY)
    t = dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=125)
    m, _ = plan(m, POLICY, t)
    later = t + dt.timedelta(minutes=5)
    assert plan(m, POLICY, later, published=False) is None      # the webhooks do not carry the new CA yet
    assert plan(m, POLICY, later, published=True)[1] == "serving certificate renewed"


def test_changed_names_reissue_the_serving_certificate():
    m = fresh(POLICY)
    renamed = Policy(**{**POLICY.__dict__, "dns_names": ("webhook.example.com",)})
    step = plan(m, renamed, dt.datetime.now(dt.timezone.utc))
    assert step and step[1] == "serving certificate renewed"
    from webhook.certificates.secret import _sans
    assert "webhook.example.com" in _sans(x509.load_pem_x509_certificate(step[0].tls_cert))


def test_starting_afresh_keeps_trusting_the_published_ca():
    old = fresh(POLICY)
    again = fresh(POLICY, still_trusted=old.bundle)
    assert len(x509.load_pem_x509_certificates(again.bundle)) == 2 and again.rotation_started is not None
    assert served_is_trusted(again)


def test_garbled_rotation_annotation_means_wait():
    m = fresh(POLICY)
    parsed = Material.from_secret(m.secret_data(), {"workload-webhook.k8s.io/ca-rotation-started": "garbage"})
    assert parsed.rotation_started is not None
    naive = Material.from_secret(m.secret_data(), {"workload-webhook.k8s.io/ca-rotation-started": "2026-01-01T00:00:00"})
    assert naive.rotation_started.tzinfo is not None


def test_a_stalled_loop_is_noticed(tmp_path):
    import os
    import time
    from webhook.certificates.secret import HEARTBEAT, stalled
    assert not stalled(str(tmp_path), 30)                   # no loop (yet): nothing to judge
    beat = tmp_path / HEARTBEAT
    beat.write_text("now")
    assert not stalled(str(tmp_path), 30)
    old = time.time() - 200
    os.utime(beat, (old, old))
    assert stalled(str(tmp_path), 30)


def test_grace_must_cover_three_intervals():
    import pytest
    from webhook import config
    with pytest.raises(config.ConfigError, match="graceSeconds"):
        config.from_dict({"certificates": {"graceSeconds": 10, "checkIntervalSeconds": 30}})
