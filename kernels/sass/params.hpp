// The names of the kernels' template parameters, read from the kernel sources at build time
// (dql_sass_pack --source), so that the SASS view can say what each argument of a kernel's name is:
// cuobjdump's names carry only the values ("ft_lane_kernel<fp16, false, 16, ...>").
#pragma once

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace dql::sass {

struct KernelParams {
  std::string kernel;              // "ft_lane_kernel"
  std::vector<std::string> names;  // {"T", "NAIVE", "W", ...}, in order
};

namespace params_detail {

inline bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The source with its comments blanked out (each a space), so that nothing in them reads as code.
inline std::string without_comments(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 2, "//") == 0) {
      const size_t nl = s.find('\n', i);
      i = nl == std::string_view::npos ? s.size() : nl;
      out += ' ';
    } else if (s.compare(i, 2, "/*") == 0) {
      const size_t end = s.find("*/", i + 2);
      i = end == std::string_view::npos ? s.size() : end + 2;
      out += ' ';
    } else {
      out += s[i++];
    }
  }
  return out;
}

inline size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return i;
}

// The word at `i` (identifier characters), or empty.
inline std::string_view word_at(std::string_view s, size_t i) {
  size_t j = i;
  while (j < s.size() && ident_char(s[j])) ++j;
  return s.substr(i, j - i);
}

// From the bracket at `i` ('<' or '('), calls at(j) for each character of the bracket's own level (not
// inside brackets nested in it; angle brackets count only outside parentheses, where "a > b" is an
// expression) and returns the index just past its closing bracket, or npos where it does not close.
template <class At>
size_t walk(std::string_view s, size_t i, At at) {
  const int own_parens = s[i] == '(' ? 1 : 0, own_angles = s[i] == '<' ? 1 : 0;
  int parens = 0, angles = 0;
  for (size_t j = i; j < s.size(); ++j) {
    const char c = s[j];
    if (c == '(') ++parens;
    if (c == ')') --parens;
    if (parens == 0 && c == '<') ++angles;
    if (parens == 0 && c == '>') --angles;
    if (parens == 0 && angles == 0) return j + 1;
    if (j > i && parens == own_parens && angles == own_angles) at(j);
  }
  return std::string_view::npos;
}

inline size_t past_close(std::string_view s, size_t i) {
  return walk(s, i, [](size_t) {});
}

// A parameter's name: "OutType T" -> "T", "bool SLOTS = false" -> "SLOTS",
// "void (*Item)(const Args&, int64_t)" -> "Item".
inline std::string param_name(std::string_view p) {
  if (const size_t fp = p.find("(*"); fp != std::string_view::npos) return std::string(word_at(p, fp + 2));
  size_t end = p.find('=');
  if (end == std::string_view::npos) end = p.size();
  while (end > 0 && !ident_char(p[end - 1])) --end;
  size_t begin = end;
  while (begin > 0 && ident_char(p[begin - 1])) --begin;
  return std::string(p.substr(begin, end - begin));
}

}  // namespace params_detail

// Every "template <...> __global__ void [__launch_bounds__(...)] NAME(" of a source, in order.
inline std::vector<KernelParams> template_params_in_source(std::string_view source) {
  using namespace params_detail;
  const std::string text = without_comments(source);
  const std::string_view s = text;
  std::vector<KernelParams> out;
  for (size_t at = s.find("template"); at != std::string_view::npos; at = s.find("template", at + 8)) {
    if ((at > 0 && ident_char(s[at - 1])) || word_at(s, at) != "template") continue;
    const size_t lt = skip_space(s, at + 8);
    if (lt >= s.size() || s[lt] != '<') continue;
    const size_t gt = past_close(s, lt);
    if (gt == std::string_view::npos) continue;
    size_t i = skip_space(s, gt);
    if (word_at(s, i) != "__global__") continue;
    i = skip_space(s, i + 10);
    if (word_at(s, i) != "void") continue;
    i = skip_space(s, i + 4);
    if (word_at(s, i) == "__launch_bounds__") {
      i = skip_space(s, i + 17);
      if (i >= s.size() || s[i] != '(') continue;
      i = past_close(s, i);
      if (i == std::string_view::npos) continue;
      i = skip_space(s, i);
    }
    const std::string_view name = word_at(s, i);
    if (name.empty()) continue;
    KernelParams k{std::string(name), {}};
    // The parameters, split at the commas of the list itself (not those of nested brackets).
    size_t start = lt + 1;
    walk(s, lt, [&](size_t j) {
      if (s[j] != ',') return;
      k.names.push_back(param_name(s.substr(start, j - start)));
      start = j + 1;
    });
    k.names.push_back(param_name(s.substr(start, gt - 1 - start)));
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace dql::sass
