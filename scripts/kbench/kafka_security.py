"""The throwaway security of a local Kafka cluster (scripts/kafka start --security MODE):
a CA and certificates made with openssl, random passwords, the SCRAM users Kafka's storage
tool creates when the nodes are formatted, and the client settings of each mode; and, at
stop, the deletion of all of it.
"""

import glob
import os
import re
import secrets

from kbench import jvm_service as svc
from kbench import proc

PROTOCOLS = {"plaintext": "PLAINTEXT", "ssl": "SSL", "mtls": "SSL", "sasl_plaintext": "SASL_PLAINTEXT",
             "sasl_ssl": "SASL_SSL"}
SCRAM_MECHANISM = "SCRAM-SHA-512"
SCRAM_CLIENT_USER = "kbench"
# Brokers authenticate to each other over the same listener with their own user.
SCRAM_BROKER_USER = "kbench-broker"
SCRUBBED_SECRET = "(deleted by scripts/kafka stop)"


def uses_tls(mode):
    return mode in ("ssl", "mtls", "sasl_ssl")


def uses_sasl(mode):
    return mode.startswith("sasl_")


def summary(mode):
    """One line for messages and status: "sasl_ssl (SASL_SSL, SCRAM-SHA-512)"."""
    what = PROTOCOLS.get(mode, "")
    if uses_sasl(mode):
        what += ", " + SCRAM_MECHANISM
    if mode == "mtls":
        what += ", client certificates required"
    return "%s (%s)" % (mode, what)


def make_certificates(tls, hosts, password):
    """CA, broker and client certificates. The broker's names 127.0.0.1 and the nodes'
    addresses (what they listen on and advertise), nothing else: a client that connects as
    "localhost" fails hostname verification, which is how the failure tests provoke it.
    Passwords reach openssl through the environment, never its command line."""
    days, names = "7", ["IP:127.0.0.1"]
    for h in hosts:
        name = ("IP:" if re.fullmatch(r"[0-9.]+", h) else "DNS:") + h
        if name not in names:
            names.append(name)
    os.makedirs(tls, exist_ok=True)
    os.chmod(tls, 0o700)
    env = dict(os.environ, KBENCH_TLS_PASS=password)
    log = tls + "/openssl.log"

    def openssl(*args):
        if proc.run(("openssl",) + args, cwd=tls, env=env, log=log).returncode:
            raise svc.ServiceError("making the throwaway certificates failed; see %s:%s" % (log, svc.log_tail(log)))
    old = os.umask(0o077)
    try:
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
                "-days", days, "-subj", "/CN=kbench throwaway CA", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        for who, subject, san in (("broker", "/CN=127.0.0.1", "subjectAltName=" + ",".join(names)),
                                  ("client", "/CN=kbench client", "")):
            openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", who + ".key.plain", "-out", who + ".csr",
                    "-subj", subject)
            with open("%s/%s.ext" % (tls, who), "w") as f:
                f.write("%s\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n" % san)
            openssl("x509", "-req", "-in", who + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                    "-days", days, "-extfile", who + ".ext", "-out", who + ".pem")
            # PKCS#12 for Java (the broker's keystore, the Java tools' client keystore).
            openssl("pkcs12", "-export", "-in", who + ".pem", "-inkey", who + ".key.plain", "-certfile", "ca.pem",
                    "-name", who, "-out", who + ".p12", "-passout", "env:KBENCH_TLS_PASS")
            svc.remove("%s/%s.csr" % (tls, who), "%s/%s.ext" % (tls, who))
        # librdkafka's client key, encrypted: a real ssl.key.password for the leak tests.
        openssl("pkcs8", "-topk8", "-in", "client.key.plain", "-out", "client.key", "-passout", "env:KBENCH_TLS_PASS")
        svc.remove(tls + "/*.key.plain", tls + "/ca.srl")
        for f in ("ca.pem", "broker.pem", "client.pem"):
            os.chmod(os.path.join(tls, f), 0o644)
    finally:
        os.umask(old)


def prepare(d, mode, hosts):
    """Write the security mode, tls/ (the broker certificate naming every node's HOST),
    client.properties and client-java.properties in state directory D; return the broker's
    settings and the storage tool's --add-scram arguments."""
    protocol = PROTOCOLS[mode]
    svc.remove(d + "/tls", d + "/client.properties", d + "/client-java.properties")
    svc.write_line(d + "/security", mode)
    client, java, broker, scram = ["security.protocol=" + protocol], ["security.protocol=" + protocol], [], []
    # Alphanumeric: the passwords go inside JAAS quotes and properties files unescaped.
    if uses_tls(mode):
        tls, pw = d + "/tls", secrets.token_hex(16)
        make_certificates(tls, hosts, pw)
        broker += ["ssl.keystore.type=PKCS12", "ssl.keystore.location=%s/broker.p12" % tls,
                   "ssl.keystore.password=" + pw, "ssl.key.password=" + pw,
                   "ssl.truststore.type=PEM", "ssl.truststore.location=%s/ca.pem" % tls,
                   "ssl.client.auth=" + ("required" if mode == "mtls" else "none")]
        client.append("ssl.ca.location=%s/ca.pem" % tls)
        java += ["ssl.truststore.type=PEM", "ssl.truststore.location=%s/ca.pem" % tls]
        if mode == "mtls":
            client += ["ssl.certificate.location=%s/client.pem" % tls, "ssl.key.location=%s/client.key" % tls,
                       "ssl.key.password=" + pw]
            java += ["ssl.keystore.type=PKCS12", "ssl.keystore.location=%s/client.p12" % tls,
                     "ssl.keystore.password=" + pw, "ssl.key.password=" + pw]
    if uses_sasl(mode):
        client_pw, broker_pw = secrets.token_hex(16), secrets.token_hex(16)
        module = "org.apache.kafka.common.security.scram.ScramLoginModule"
        broker += ["sasl.enabled.mechanisms=" + SCRAM_MECHANISM,
                   "sasl.mechanism.inter.broker.protocol=" + SCRAM_MECHANISM,
                   'listener.name.%s.%s.sasl.jaas.config=%s required username="%s" password="%s";'
                   % (protocol.lower(), SCRAM_MECHANISM.lower(), module, SCRAM_BROKER_USER, broker_pw)]
        client += ["sasl.mechanisms=" + SCRAM_MECHANISM, "sasl.username=" + SCRAM_CLIENT_USER,
                   "sasl.password=" + client_pw]
        java += ["sasl.mechanism=" + SCRAM_MECHANISM,
                 'sasl.jaas.config=%s required username="%s" password="%s";' % (module, SCRAM_CLIENT_USER, client_pw)]
        # KRaft keeps SCRAM users in the metadata log: the first ones are written at format time.
        scram = ["--add-scram", "%s=[name=%s,password=%s]" % (SCRAM_MECHANISM, SCRAM_BROKER_USER, broker_pw),
                 "--add-scram", "%s=[name=%s,password=%s]" % (SCRAM_MECHANISM, SCRAM_CLIENT_USER, client_pw)]
    old = os.umask(0o077)
    try:
        with open(d + "/client.properties", "w") as f:
            f.write("# librdkafka settings of the %s cluster in %s,\n" % (summary(mode), d))
            f.write("# for kbench --client-config. Throwaway secrets; deleted by scripts/kafka stop.\n")
            f.write("".join(line + "\n" for line in client))
        with open(d + "/client-java.properties", "w") as f:
            f.write("# Java client settings of the same cluster, for Kafka's tools (--command-config ...).\n")
            f.write("".join(line + "\n" for line in java))
    finally:
        os.umask(old)
    return "".join(line + "\n" for line in broker), scram


def forget_secrets(d):
    """After stop: nothing that could authenticate stays on disk."""
    svc.remove(d + "/tls", d + "/client.properties", d + "/client-java.properties")
    for f in glob.glob(d + "/node-*/server.properties"):
        text = svc.read(f)
        text = re.sub(r"(?m)^([^#=\n]*password=).*", lambda m: m.group(1) + SCRUBBED_SECRET, text)
        text = re.sub(r'(password=")[^"\n]*"', lambda m: m.group(1) + SCRUBBED_SECRET + '"', text)
        svc.write_line(f, text)
