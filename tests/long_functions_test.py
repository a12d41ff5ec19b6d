#!/usr/bin/env python3
"""scripts/long-functions on C++ written to trip it: what it must count, what it must not."""
import importlib.machinery
import importlib.util
import pathlib
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parent.parent
loader = importlib.machinery.SourceFileLoader("long_functions", str(ROOT / "scripts/long-functions"))
spec = importlib.util.spec_from_loader("long_functions", loader)
checker = importlib.util.module_from_spec(spec)
loader.exec_module(checker)


def statements(n):
    return "".join(f"  x += {i};\n" for i in range(n))


class LongFunctions(unittest.TestCase):
    def found(self, text, max_lines=10):
        with tempfile.TemporaryDirectory() as directory:
            path = pathlib.Path(directory) / "code.cpp"
            path.write_text(text)
            return [(name, lines) for _, name, lines in checker.long_functions(path, max_lines)]

    def test_counts_from_the_opening_brace_to_the_closing_one(self):
        self.assertEqual(self.found("int f(int x) {\n" + statements(8) + "}\n"), [])
        self.assertEqual(self.found("int f(int x) {\n" + statements(9) + "}\n"), [("f", 11)])

    def test_qualifiers_trailing_returns_and_member_initializers(self):
        text = (
            "namespace a {\nstruct S {\n  int g() const noexcept(true) {\n" + statements(12) + "}\n};\n"
            "auto S::h() -> std::vector<int> {\n" + statements(12) + "}\n"
            "S::S(int v) : x_(v), y_{v, 2}, z_(std::max(v, 3)) {\n" + statements(12) + "}\n}\n"
        )
        self.assertEqual([name for name, _ in self.found(text)], ["g", "S::h", "S::S"])

    def test_names_of_operators_and_destructors(self):
        text = ("bool S::operator==(const S& o) const {\n" + statements(12) + "}\n"
                "void S::operator()(int x) {\n" + statements(12) + "}\n"
                "S& S::operator<<=(int x) {\n" + statements(12) + "}\n"
                "S::~S() {\n" + statements(12) + "}\n")
        self.assertEqual([name for name, _ in self.found(text)],
                         ["S::operator==", "S::operator()", "S::operator<<=", "S::~S"])

    def test_tests_and_lambdas_at_namespace_scope_are_functions(self):
        text = ("TEST(Suite, Name) {\n" + statements(12) + "}\n"
                "const auto f = [](int x) {\n" + statements(12) + "};\n")
        self.assertEqual([name for name, _ in self.found(text)], ["TEST(Suite, Name)", "f (a lambda)"])

    def test_braces_in_literals_comments_and_directives_do_not_count(self):
        text = (
            '#define OPEN {\nint f() {\n  const char* s = "{{{";\n  char c = \'{\';\n'
            '  int n = 1\'000;\n  // }\n  /* } */\n  auto r = R"x(}})x";\n' + statements(12) + "}\n"
            'const char* kGlob = "src/*.cpp";\nint g() {\n  auto r = R"(\n#}\n)";\n'
            + statements(12) + "}\n"
        )
        self.assertEqual(self.found(text), [("f", 20), ("g", 17)])

    def test_initializers_and_types_are_not_functions(self):
        text = ("const int kTable[] = {\n" + "  1,\n" * 20 + "};\n"
                "enum class E : int {\n" + "  k,\n" * 20 + "};\n"
                "struct T {\n  std::vector<int> v_{\n" + "  1,\n" * 20 + "};\n};\n")
        self.assertEqual(self.found(text), [])

    def test_a_local_class_or_lambda_belongs_to_its_function(self):
        text = "void f() {\n  auto g = [] {\n" + statements(12) + "  };\n}\n"
        self.assertEqual(self.found(text), [("f", 16)])

    def test_unmatched_braces_are_an_error(self):
        with self.assertRaises(checker.ParseError):
            self.found("void f() {\n")
        with self.assertRaises(checker.ParseError):
            self.found("}\n")

    def test_kernels_are_not_read(self):
        self.assertTrue(checker.is_kernel(ROOT / "src/cpu/kernels/q4_0_avx2.cpp"))
        self.assertTrue(checker.is_kernel(ROOT / "src/cuda/matmul.cu"))
        self.assertFalse(checker.is_kernel(ROOT / "src/cuda/cuda_backend.cpp"))
        self.assertFalse(checker.is_kernel(ROOT / "src/cpu/attention.cpp"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
