#include "embedded.hpp"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <mutex>

namespace dql::sass {

namespace {

int number_of(std::string_view arch) {
  int v = 0;
  const auto d = arch.substr(arch.find('_') + 1);
  std::from_chars(d.data(), d.data() + d.size(), v);
  return v;
}

}  // namespace

std::string embedded_text(const EmbeddedArch& e) {
  std::string text(e.text_bytes, '\0');
  uLongf n = static_cast<uLongf>(text.size());
  if (uncompress(reinterpret_cast<Bytef*>(text.data()), &n, reinterpret_cast<const Bytef*>(e.packed.data()),
                 static_cast<uLong>(e.packed.size())) != Z_OK ||
      n != text.size())
    return {};
  return text;
}

const EmbeddedArch* embedded_arch(std::string_view arch) {
  for (const auto& e : embedded()) {
    if (e.arch == arch) return &e;
  }
  return nullptr;
}

std::string embedded_arch_list() {
  std::string s;
  for (const auto& e : embedded()) s += (s.empty() ? "" : ", ") + std::string(e.arch);
  return s;
}

const Listing* embedded_listing(std::string_view arch) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Listing>, std::less<>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(arch); it != cache.end()) return it->second.get();
  if (const EmbeddedArch* e = embedded_arch(arch)) {
    auto parsed = parse(embedded_text(*e));
    auto l = std::make_unique<Listing>();
    l->arch = std::string(arch);
    for (auto& p : parsed) {
      if (p.arch == arch) *l = std::move(p);
    }
    return cache.emplace(std::string(arch), std::move(l)).first->second.get();
  }
  return nullptr;
}

std::vector<NamedArg> named_args(std::string_view short_name) {
  std::string_view base;
  const auto args = template_args(short_name, &base);
  if (args.empty()) return {};
  // Kernels in a namespace of their own keep it in their short names ("io::hopper_kernel").
  if (const size_t colons = base.rfind("::"); colons != std::string_view::npos)
    base.remove_prefix(colons + 2);
  for (const auto& k : kernel_param_names()) {
    if (k.kernel != base) continue;
    std::vector<NamedArg> out;
    for (size_t at = 0; at < k.names.size();) {
      const size_t sp = std::min(k.names.find(' ', at), k.names.size());
      out.push_back({std::string(k.names.substr(at, sp - at)), {}});
      at = sp + 1;
    }
    if (out.size() != args.size()) continue;  // another template of the same name
    for (size_t a = 0; a < args.size(); ++a) out[a].value = std::string(args[a]);
    return out;
  }
  return {};
}

std::string param_list(std::string_view short_name) {
  std::string s;
  for (const auto& a : named_args(short_name)) s += (s.empty() ? "" : ", ") + a.name + " = " + a.value;
  return s;
}

std::string with_param_names(std::string_view short_name) {
  const std::string list = param_list(short_name);
  return list.empty() ? list : std::string(short_name.substr(0, short_name.find('<'))) + "<" + list + ">";
}

std::string default_arch(std::string_view preferred) {
  const auto all = embedded();
  if (all.empty()) return {};
  const int want = number_of(preferred);
  std::string best;
  for (const auto& e : all) {
    if (e.arch == preferred) return std::string(e.arch);
    if (number_of(e.arch) < want) best = std::string(e.arch);
  }
  return best.empty() ? std::string(all.front().arch) : best;
}

}  // namespace dql::sass
