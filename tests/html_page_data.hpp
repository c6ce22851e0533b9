// The data block of an HTML report, turned from the columns the page
// carries into rows as the page's script turns them (src/io/html_page.cpp,
// html_renderer.hpp): an op [label, item, start, end, kind, stream, engine,
// size, op id, chunk]; a host span [label text, start, end, activity,
// thread]. Shared by the tests that read pages.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace overlap::test {

/// The JSON of the page's overlap-data block, as written.
inline nlohmann::json page_data_block(const std::string& page) {
  const std::string open = R"(<script type="application/json" id="overlap-data">)";
  const auto from = page.find(open);
  if (from == std::string::npos) return nlohmann::json::object();
  const auto start = from + open.size();
  return nlohmann::json::parse(page.substr(start, page.find("</script>", start) - start));
}

/// `data` with each run's ops and host spans as rows.
inline nlohmann::json page_rows(nlohmann::json data) {
  using nlohmann::json;
  const double quantum = data.value("quantum", 1.0);
  for (json& run : data.at("runs")) {
    const json& c = run.at("ops");
    json ops = json::array();
    std::int64_t start = 0, op = 0, chunk = -1;
    for (std::size_t i = 0; i < c.at("label").size(); ++i) {
      start += c["start"][i].get<std::int64_t>();
      op += c["op"][i].get<std::int64_t>();
      chunk += c["chunk"][i].get<std::int64_t>();
      const double end = static_cast<double>(start + c["duration"][i].get<std::int64_t>()) * quantum;
      ops.push_back(json::array({c["label"][i], c["item"][i], static_cast<double>(start) * quantum, end,
                                 c["kind"][i], c["stream"][i], c["engine"][i], c["size"][i], op, chunk}));
    }
    const json& h = run.at("host");
    json host = json::array();
    std::int64_t end = 0;
    std::size_t number = 0;
    std::map<std::int64_t, std::int64_t> last;
    std::string text;
    for (std::size_t i = 0; i < h.at("label").size(); ++i) {
      const auto code = h["label"][i].get<std::int64_t>();
      if (code >= 0) {
        text = data.at("labels").at(static_cast<std::size_t>(code)).get<std::string>();
      } else if (code <= -2) {
        const std::int64_t k = -2 - code;
        last[k] += h.at("numbers").at(number++).get<std::int64_t>();
        const json& t = data.at("templates").at(static_cast<std::size_t>(k));
        text = t[0].get<std::string>() + std::to_string(last[k]) + t[1].get<std::string>();
      }
      const std::int64_t from = end + h["start"][i].get<std::int64_t>();
      end = from + h["duration"][i].get<std::int64_t>();
      host.push_back(
          json::array({text, static_cast<double>(from) * quantum, static_cast<double>(end) * quantum,
                       h["activity"][i], h.contains("thread") ? h["thread"][i] : json(0)}));
    }
    run["ops"] = std::move(ops);
    run["host"] = std::move(host);
  }
  return data;
}

}  // namespace overlap::test
