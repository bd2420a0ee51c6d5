"""kbench.kafka_cluster without a JVM: its functions refuse bad input with status 2 before
anything is made, a start that ends early (here: Ctrl-C while waiting for the brokers)
stops the nodes it started, run-class maps short names per release, and the command's
SIGTERM handler ends it as an exception (143), so that those clean-ups run; a launched
process is known by its pid file while it execs (ip netns exec becoming java) and not
once it has exited."""

import os
import signal
import subprocess
import tempfile
import time
import unittest
from unittest import mock

from kbench import jvm_service as svc
from kbench import kafka_cluster as kafka

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


class Refusals(unittest.TestCase):
    def test_bad_input_is_status_2_and_makes_nothing(self):
        d = os.path.join(tempfile.mkdtemp(), "state")
        for kw in ({"brokers": 0}, {"host": "nowhere"}, {"security": "tls13"}, {"version": "latest"},
                   {"port_base": 80}, {"host": "127.0.0.2", "netns": "/tmp/t"}):
            with self.subTest(**kw), self.assertRaises(kafka.KafkaError) as e:
                kafka.start(d, **kw)
            self.assertEqual(e.exception.status, 2)
        self.assertFalse(os.path.exists(d))

    def test_the_command_says_why_and_exits_2(self):
        p = subprocess.run([os.path.join(ROOT, "scripts", "kafka"), "start", "--brokers", "0", "--dir",
                            tempfile.mkdtemp()], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("scripts/kafka: error: --brokers must be 1..9, got 0", p.stderr)


class InterruptedStart(unittest.TestCase):
    def test_ctrl_c_while_waiting_stops_the_nodes(self):
        d = tempfile.mkdtemp()
        formatted = mock.Mock(wait=mock.Mock(return_value=0), poll=mock.Mock(return_value=0))
        with mock.patch.object(kafka, "java_and_classpath", return_value=("java", "cp")), \
                mock.patch.object(kafka.subprocess, "Popen", return_value=formatted), \
                mock.patch.object(kafka, "launch_node") as launch, \
                mock.patch.object(kafka, "wait_ready", side_effect=KeyboardInterrupt), \
                mock.patch.object(kafka, "kill_nodes") as kill, \
                mock.patch.object(svc, "port_open", return_value=False), \
                mock.patch.dict(os.environ, {"KBENCH_DRY_RUN": ""}):
            with self.assertRaises(KeyboardInterrupt):
                kafka.start(d, brokers=2, port_base=29092)
        self.assertEqual(launch.call_count, 2)
        kill.assert_called_once_with(os.path.realpath(d), 10)
        self.assertFalse(os.path.exists(d + "/bootstrap"))

    def test_sigterm_is_an_exit_with_143(self):
        with self.assertRaises(SystemExit) as e:
            svc.terminate(signal.SIGTERM, None)
        self.assertEqual(e.exception.code, 143)


# Run as CHAIN MARKER COUNT: execs itself COUNT times, keeping launch()'s pid file marker, then waits.
EXEC_CHAIN = """#!/bin/sh
if [ "$2" -gt 0 ]; then exec "$0" "$1" $(($2 - 1)); fi
while sleep 1; do :; done
"""


class LaunchedProcess(unittest.TestCase):
    def setUp(self):
        self.d = tempfile.mkdtemp()
        self.chain = os.path.join(self.d, "exec-chain")
        with open(self.chain, "w") as f:
            f.write(EXEC_CHAIN)
        os.chmod(self.chain, 0o755)
        self.pidfile = os.path.join(self.d, "pid")

    def tearDown(self):
        p = svc.pid(self.pidfile)
        if p:
            os.kill(int(p), signal.SIGKILL)

    def test_a_process_that_execs_stays_itself(self):
        # Between two programs (execve) /proc/PID/cmdline reads empty: that is not an exit.
        svc.launch(self.pidfile, os.path.join(self.d, "log"), "chain", "", [self.chain, "3000"])
        want = svc.read(self.pidfile)
        lost = sum(1 for _ in range(3000) if svc.pid(self.pidfile) != want)
        self.assertEqual(lost, 0, "pid() lost a live process %d times of 3000" % lost)

    def test_an_exited_process_is_gone(self):
        # Exited, not reaped yet (a zombie): its cmdline reads empty too, and it is no longer running.
        svc.launch(self.pidfile, os.path.join(self.d, "log"), "chain", "", [self.chain, "0"])
        p = int(svc.read(self.pidfile))
        os.kill(p, signal.SIGKILL)
        for _ in range(100):
            with open("/proc/%d/stat" % p) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
            time.sleep(0.01)
        t0 = time.monotonic()
        self.assertIsNone(svc.pid(self.pidfile))
        self.assertLess(time.monotonic() - t0, 1.0)


class RunClass(unittest.TestCase):
    def test_short_names_follow_the_release(self):
        with mock.patch.object(kafka, "java_and_classpath", return_value=("java", "cp")), \
                mock.patch.object(kafka.subprocess, "run") as run, \
                mock.patch.dict(os.environ, {"KBENCH_DRY_RUN": "", "KBENCH_KAFKA_TOOL_OPTS": "-Xmx64m"}):
            kafka.run_class(["console-producer", "--topic", "t"], version="3.9.1", check=True)
            kafka.run_class(["console-producer"], version="4.4.0")
        cmd, kw = run.call_args_list[0].args[0], run.call_args_list[0].kwargs
        self.assertEqual(cmd[-4:], ["cp", "kafka.tools.ConsoleProducer", "--topic", "t"])
        self.assertIn("-Xmx64m", cmd)
        self.assertEqual(kw, {"check": True})
        self.assertEqual(run.call_args_list[1].args[0][-1], "org.apache.kafka.tools.ConsoleProducer")

    def test_unknown_names_are_refused(self):
        for args in ([], ["no such tool"], ["nope"]):
            with self.subTest(args=args), self.assertRaises(kafka.KafkaError) as e:
                kafka.run_class(args, version="4.4.0")
            self.assertEqual(e.exception.status, 2)


if __name__ == "__main__":
    unittest.main()
