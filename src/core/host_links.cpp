#include "overlap/core/host_links.hpp"

#include <fmt/format.h>

#include "host_links_json.hpp"
#include "model_json.hpp"
#include "overlap/core/error.hpp"
#include "overlap/core/limits.hpp"

namespace overlap {

namespace {

using json = nlohmann::json;

double rate_of(const HostGpu& gpu, copy_direction direction) noexcept {
  return direction == copy_direction::h2d ? gpu.h2d_gigabytes_per_second : gpu.d2h_gigabytes_per_second;
}

double number_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw invalid_input(fmt::format("{}.{}: missing", where, key));
  if (!j.at(key).is_number()) throw invalid_input(fmt::format("{}.{}: expected a number", where, key));
  return j.at(key).get<double>();
}

device_id device_field(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw invalid_input(fmt::format("{}.{}: missing", where, key));
  const json& v = j.at(key);
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() >= limits::max_devices)
    throw invalid_input(
        fmt::format("{}.{}: expected a device number from 0 to {}", where, key, limits::max_devices - 1));
  return static_cast<device_id>(v.get<std::uint64_t>());
}

void require_known_fields(const json& j, std::initializer_list<const char*> known, const std::string& where) {
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) throw invalid_input(fmt::format("{}: unknown field '{}'", where, key));
  }
}

}  // namespace

double HostLinks::copy_time_scale(device_id device, copy_direction direction) const noexcept {
  if (direction == copy_direction::d2d || device >= gpus.size() || gpus.empty()) return 1.0;
  return rate_of(gpus.front(), direction) / rate_of(gpus[device], direction);
}

const PeerLink* HostLinks::peer(device_id from, device_id to) const noexcept {
  for (const PeerLink& link : peers) {
    if (link.from == from && link.to == to) return &link;
  }
  return nullptr;
}

void HostLinks::validate() const {
  if (gpus.empty()) throw invalid_input("device model: host.gpus: needs at least one GPU");
  if (gpus.size() > limits::max_devices)
    throw invalid_input(
        fmt::format("device model: host.gpus: {} GPUs (at most {})", gpus.size(), limits::max_devices));
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const auto where = fmt::format("device model: host.gpus[{}]", i);
    detail::require_positive(gpus[i].h2d_gigabytes_per_second, where + ".h2d_gbps");
    detail::require_positive(gpus[i].d2h_gigabytes_per_second, where + ".d2h_gbps");
    detail::require_positive(gpus[i].both_gigabytes_per_second, where + ".both_gbps");
  }
  detail::require_positive(h2d_gigabytes_per_second, "device model: host.h2d_gbps");
  detail::require_positive(d2h_gigabytes_per_second, "device model: host.d2h_gbps");
  detail::require_positive(both_gigabytes_per_second, "device model: host.both_gbps");
  for (std::size_t i = 0; i < peers.size(); ++i) {
    const PeerLink& p = peers[i];
    const auto where = fmt::format("device model: host.peers[{}]", i);
    if (p.from >= gpus.size() || p.to >= gpus.size())
      throw invalid_input(
          fmt::format("{}: GPU {} to {}, but the host lists {} GPUs", where, p.from, p.to, gpus.size()));
    if (p.from == p.to) throw invalid_input(fmt::format("{}: from and to are both GPU {}", where, p.from));
    for (std::size_t k = 0; k < i; ++k) {
      if (peers[k].from == p.from && peers[k].to == p.to)
        throw invalid_input(fmt::format("{}: GPU {} to {} is listed twice", where, p.from, p.to));
    }
    detail::validate_curve(p.rate, where + ".curve");
  }
}

namespace detail {

nlohmann::json host_links_to_json(const HostLinks& host) {
  json gpus = json::array();
  for (const HostGpu& g : host.gpus) {
    gpus.push_back({{"name", g.name},
                    {"h2d_gbps", g.h2d_gigabytes_per_second},
                    {"d2h_gbps", g.d2h_gigabytes_per_second},
                    {"both_gbps", g.both_gigabytes_per_second}});
  }
  json peers = json::array();
  for (const PeerLink& p : host.peers)
    peers.push_back({{"from", p.from}, {"to", p.to}, {"direct", p.direct}, {"curve", curve_to_json(p.rate)}});
  return {{"gpus", gpus},
          {"h2d_gbps", host.h2d_gigabytes_per_second},
          {"d2h_gbps", host.d2h_gigabytes_per_second},
          {"both_gbps", host.both_gigabytes_per_second},
          {"peers", peers}};
}

HostLinks host_links_from_json(const nlohmann::json& j) {
  const std::string where = "device model: host";
  if (!j.is_object()) throw invalid_input(where + ": expected an object");
  require_known_fields(j, {"gpus", "h2d_gbps", "d2h_gbps", "both_gbps", "peers"}, where);
  HostLinks host;
  if (!j.contains("gpus") || !j["gpus"].is_array())
    throw invalid_input(where + ".gpus: expected an array of GPUs");
  for (std::size_t i = 0; i < j["gpus"].size(); ++i) {
    const json& g = j["gpus"][i];
    const auto at = fmt::format("{}.gpus[{}]", where, i);
    if (!g.is_object()) throw invalid_input(at + ": expected an object");
    require_known_fields(g, {"name", "h2d_gbps", "d2h_gbps", "both_gbps"}, at);
    HostGpu gpu;
    if (g.contains("name")) {
      if (!g["name"].is_string()) throw invalid_input(at + ".name: expected a string");
      gpu.name = g["name"].get<std::string>();
    }
    gpu.h2d_gigabytes_per_second = number_field(g, "h2d_gbps", at);
    gpu.d2h_gigabytes_per_second = number_field(g, "d2h_gbps", at);
    gpu.both_gigabytes_per_second = number_field(g, "both_gbps", at);
    host.gpus.push_back(std::move(gpu));
  }
  host.h2d_gigabytes_per_second = number_field(j, "h2d_gbps", where);
  host.d2h_gigabytes_per_second = number_field(j, "d2h_gbps", where);
  host.both_gigabytes_per_second = number_field(j, "both_gbps", where);
  if (j.contains("peers")) {
    if (!j["peers"].is_array()) throw invalid_input(where + ".peers: expected an array");
    for (std::size_t i = 0; i < j["peers"].size(); ++i) {
      const json& p = j["peers"][i];
      const auto at = fmt::format("{}.peers[{}]", where, i);
      if (!p.is_object()) throw invalid_input(at + ": expected an object");
      require_known_fields(p, {"from", "to", "direct", "curve"}, at);
      PeerLink link;
      link.from = device_field(p, "from", at);
      link.to = device_field(p, "to", at);
      if (p.contains("direct")) {
        if (!p["direct"].is_boolean()) throw invalid_input(at + ".direct: expected true or false");
        link.direct = p["direct"].get<bool>();
      }
      if (!p.contains("curve")) throw invalid_input(at + ".curve: missing");
      link.rate = curve_from_json(p["curve"], at + ".curve");
      host.peers.push_back(std::move(link));
    }
  }
  return host;
}

}  // namespace detail

}  // namespace overlap
