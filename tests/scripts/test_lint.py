"""The project's .clang-tidy still finds what it is kept for: each planted bug below is reported
under its check, with the command scripts/lint --tidy runs. The check set was cut for time
(checks of style and of bugs this code cannot have); what is planted here must survive any cut."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from kbench.commands import lint

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# check name -> a function that has that bug (and no other finding).
PLANTED = {
    "bugprone-use-after-move": """
size_t UseAfterMove() {
  std::string a = "record";
  std::string b = std::move(a);
  return a.size() + b.size();
}""",
    # Only when the analyzer follows the member call into Read (its default, inlining C++).
    "clang-analyzer-core.NullDereference": """
struct Reader {
  int Read(const int* p) const { return *p; }
};
int PassNull() {
  Reader r;
  return r.Read(nullptr);
}""",
    "clang-analyzer-deadcode.DeadStores": """
int DeadStore(int x) {
  int unused = x * 2;
  unused = 3;
  return x;
}""",
    "performance-for-range-copy": """
size_t RangeCopy(const std::vector<std::string>& names) {
  size_t n = 0;
  for (std::string name : names) n += name.size();
  return n;
}""",
    "google-explicit-constructor": """
struct Implicit {
  Implicit(int v) : value(v) {}
  int value;
};""",
}


@unittest.skipUnless(shutil.which("clang-tidy"), "clang-tidy is not installed (scripts/setup installs it)")
class ClangTidyConfig(unittest.TestCase):
    def test_every_planted_bug_is_found_under_its_check(self):
        d = tempfile.mkdtemp(prefix="kbench-lint-test.")
        self.addCleanup(shutil.rmtree, d)
        shutil.copy(os.path.join(ROOT, ".clang-tidy"), d)
        os.makedirs(os.path.join(d, "benchmarks"))
        source = os.path.join(d, "benchmarks", "planted.cc")
        with open(source, "w") as f:
            f.write("#include <string>\n#include <utility>\n#include <vector>\n\n")
            f.write("\n".join(PLANTED.values()) + "\n")
        with open(os.path.join(d, "compile_commands.json"), "w") as f:
            json.dump([{"directory": d, "file": source,
                        "arguments": ["c++", "-std=c++20", "-c", source, "-o", os.devnull]}], f)
        p = subprocess.run(lint.TIDY + ["-p", d, source], capture_output=True, text=True, timeout=300)
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        for check in PLANTED:
            with self.subTest(check=check):
                self.assertIn("[%s" % check, p.stdout)


if __name__ == "__main__":
    unittest.main()
