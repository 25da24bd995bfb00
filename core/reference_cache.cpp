#include "core/reference_cache.hpp"

#include "core/environment.hpp"
#include "util/atomic_file.hpp"

#include <ATen/Context.h>
#include <torch/version.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace mpscheck {

namespace {

constexpr char kMagic[8] = {'M', 'P', 'S', 'C', 'R', 'E', 'F', '1'};
// An entry larger than this is not kept (a full-size model's parameters): recomputing it is
// cheaper than filling a disk.
constexpr std::uint64_t kMaxEntryBytes = 256ull << 20;

std::uint64_t fnv1a(const std::string& data) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

struct Damaged : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Writer {
 public:
  template <class T>
  void pod(const T& v) {
    buf_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void text(const std::string& s) {
    pod<std::uint32_t>(static_cast<std::uint32_t>(s.size()));
    buf_ += s;
  }
  void tensor(const at::Tensor& t) {
    pod<std::uint8_t>(t.defined());
    if (!t.defined()) return;
    const at::Tensor c = t.detach().to(c10::kCPU).contiguous();
    pod<std::int8_t>(static_cast<std::int8_t>(c.scalar_type()));
    pod<std::uint32_t>(static_cast<std::uint32_t>(c.dim()));
    for (auto s : c.sizes()) pod<std::int64_t>(s);
    const std::uint64_t nbytes = c.numel() * c.element_size();
    pod<std::uint64_t>(nbytes);
    buf_.append(static_cast<const char*>(c.data_ptr()), nbytes);
  }
  std::string& bytes() { return buf_; }

 private:
  std::string buf_;
};

class Reader {
 public:
  explicit Reader(const std::string& data) : data_(data) {}
  template <class T>
  T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string text() {
    const auto n = pod<std::uint32_t>();
    need(n);
    std::string s = data_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  at::Tensor tensor() {
    if (!pod<std::uint8_t>()) return {};
    const auto type = static_cast<c10::ScalarType>(pod<std::int8_t>());
    if (static_cast<int>(type) < 0 || static_cast<int>(type) >= static_cast<int>(c10::ScalarType::NumOptions))
      throw Damaged("an unknown dtype");
    const auto ndim = pod<std::uint32_t>();
    if (ndim > 64) throw Damaged("an impossible rank");
    std::vector<std::int64_t> sizes;
    std::uint64_t numel = 1;
    for (std::uint32_t i = 0; i < ndim; ++i) {
      sizes.push_back(pod<std::int64_t>());
      if (sizes.back() < 0 || (sizes.back() > 0 && numel > kMaxEntryBytes / static_cast<std::uint64_t>(sizes.back())))
        throw Damaged("an impossible shape");
      numel *= static_cast<std::uint64_t>(sizes.back());
    }
    const auto nbytes = pod<std::uint64_t>();
    at::Tensor t = at::empty(sizes, at::TensorOptions().dtype(type));
    if (nbytes != numel * t.element_size()) throw Damaged("a tensor whose size disagrees with its shape");
    need(nbytes);
    std::memcpy(t.data_ptr(), data_.data() + pos_, nbytes);
    pos_ += nbytes;
    return t;
  }
  bool done() const { return pos_ == data_.size(); }

 private:
  void need(std::uint64_t n) const {
    if (n > data_.size() - pos_) throw Damaged("it ends early");
  }
  const std::string& data_;
  size_t pos_ = 0;
};

std::string encode(const CachedReference& e) {
  Writer w;
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(e.outputs.size()));
  for (const auto& o : e.outputs) {
    w.text(o.name);
    w.tensor(o.value);
    w.tensor(o.standard_error);
  }
  w.pod<std::uint8_t>(e.determinism_checked);
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(e.rerun.size()));
  for (const auto& [name, t] : e.rerun) {
    w.text(name);
    w.tensor(t);
  }
  w.pod<std::uint32_t>(static_cast<std::uint32_t>(e.gold.size()));
  for (const auto& [name, t] : e.gold) {
    w.text(name);
    w.tensor(t);
  }
  w.pod<std::uint8_t>(e.reference_time.has_value());
  if (e.reference_time) {
    w.pod<double>(e.reference_time->median_s);
    w.pod<double>(e.reference_time->p25_s);
    w.pod<double>(e.reference_time->p75_s);
    w.pod<std::int32_t>(e.reference_time->runs);
    w.pod<double>(e.reference_time_budget);
  }
  return std::move(w.bytes());
}

CachedReference decode(const std::string& payload) {
  Reader r(payload);
  CachedReference e;
  const auto n = r.pod<std::uint32_t>();
  for (std::uint32_t i = 0; i < n; ++i) {
    Output o;
    o.name = r.text();
    o.value = r.tensor();
    o.standard_error = r.tensor();
    e.outputs.push_back(std::move(o));
  }
  e.determinism_checked = r.pod<std::uint8_t>() != 0;
  const auto rerun = r.pod<std::uint32_t>();
  for (std::uint32_t i = 0; i < rerun; ++i) {
    std::string name = r.text();
    e.rerun[name] = r.tensor();
  }
  const auto gold = r.pod<std::uint32_t>();
  for (std::uint32_t i = 0; i < gold; ++i) {
    std::string name = r.text();
    e.gold[name] = r.tensor();
  }
  if (r.pod<std::uint8_t>()) {
    TimingStats t;
    t.median_s = r.pod<double>();
    t.p25_s = r.pod<double>();
    t.p75_s = r.pod<double>();
    t.runs = r.pod<std::int32_t>();
    e.reference_time = t;
    e.reference_time_budget = r.pod<double>();
  }
  if (!r.done()) throw Damaged("it has bytes after its end");
  return e;
}

}  // namespace

std::string CacheKey::text() const {
  return fmt::format(
      "format 3\ntorch {}\ncpu {}\nthreads {}\ntiming threads {}\nseed {}\nquick {}\nplugin {} {}\nsource {}\ncase "
      "{}\n",
      torch, cpu, threads, timing_threads, seed, quick ? 1 : 0, plugin, plugin_version, source, case_id);
}

std::string file_digest(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const auto mtime = ec ? fs::file_time_type() : fs::last_write_time(path, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot read {}: {}", path, ec.message()));
  const std::string stamp = fmt::format("{}|{}|{}", path, size, mtime.time_since_epoch().count());
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = known.find(stamp); it != known.end()) return it->second;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot read {}", path));
  std::uint64_t h = 1469598103934665603ull, n = 0;
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto got = static_cast<size_t>(in.gcount());
    for (size_t i = 0; i < got; ++i) {
      h ^= static_cast<unsigned char>(buf[i]);
      h *= 1099511628211ull;
    }
    n += got;
  }
  std::string digest = fmt::format("fnv1a64:{:016x}:{}", h, n);
  std::lock_guard<std::mutex> lock(mutex);
  known[stamp] = digest;
  return digest;
}

std::string current_torch_identity() {
  return fmt::format("{} build {:016x}", TORCH_VERSION, fnv1a(at::show_config()));
}

std::string ReferenceCache::path_for(const CacheKey& key) const {
  return (std::filesystem::path(dir_) / fmt::format("{:016x}.ref", fnv1a(key.text()))).string();
}

std::optional<CachedReference> ReferenceCache::load(const CacheKey& key, std::string* why) const {
  const std::string path = path_for(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (why) *why = "no entry";
    return std::nullopt;
  }
  std::ostringstream s;
  s << in.rdbuf();
  const std::string file = s.str();
  try {
    Reader r(file);
    char magic[sizeof kMagic];
    for (char& c : magic) c = r.pod<char>();
    if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) throw Damaged("it is not a reference cache entry");
    if (r.text() != key.text())
      throw Damaged("it was written for another key (LibTorch, CPU, seed, plugin, model file or case)");
    const auto length = r.pod<std::uint64_t>();
    if (length > kMaxEntryBytes) throw Damaged("an impossible length");
    std::string payload(static_cast<size_t>(length), '\0');
    for (char& c : payload) c = r.pod<char>();
    if (r.pod<std::uint64_t>() != fnv1a(payload)) throw Damaged("its checksum does not match");
    if (!r.done()) throw Damaged("it has bytes after its end");
    return decode(payload);
  } catch (const Damaged& e) {
    if (why) *why = fmt::format("{} not used: {}", path, e.what());
  } catch (const std::exception& e) {
    if (why) *why = fmt::format("{} not used: {}", path, e.what());
  }
  return std::nullopt;
}

bool ReferenceCache::store(const CacheKey& key, const CachedReference& entry) const {
  const std::string payload = encode(entry);
  if (payload.size() > kMaxEntryBytes) return false;
  Writer w;
  for (char c : kMagic) w.pod<char>(c);
  w.text(key.text());
  w.pod<std::uint64_t>(payload.size());
  w.bytes() += payload;
  w.pod<std::uint64_t>(fnv1a(payload));
  try {
    write_text_report(path_for(key), w.bytes());  // the one atomic writer: makes the folder, never leaves half a file
    return true;
  } catch (const ReportError&) {
    return false;
  }
}

}  // namespace mpscheck
