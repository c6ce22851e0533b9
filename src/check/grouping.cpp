// One finding per pattern: races grouped as they are found, trap findings
// merged when one rule fires on the same ops again and again.
//
// A racy loop over streams repeats one bug once per iteration and stream
// pair; listed one by one, a thousand copies of it hid every other finding.
// Grouped, a report names each bug once, with how often it happened.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "overlap/check/findings.hpp"

namespace overlap::check {

namespace {

// Fields of a key: labels are the program's own strings, so a separator
// they would hardly contain.
constexpr char sep = '\x1f';

std::string_view mode_letter(access_mode mode) {
  return mode == access_mode::write ? "w" : "r";
}

// "kernel 'scale'", or "host_work" when the label says nothing more.
std::string op_words(const Program& p, op_id id) {
  const OpRef ref = op_ref(p, id);
  return ref.label.empty() ? ref.kind : fmt::format("{} '{}'", ref.kind, ref.label);
}

std::string side_key(const Program& p, op_id id) {
  const Op& op = p.ops()[id];
  return fmt::format("{}{}{}", to_string(op.kind), sep, op.label);
}

// How coarsely races are told apart; each level merges the groups of the one before.
enum class race_level : std::uint8_t {
  same_ops,     // the same two ops (kind and label) in the same order, with the same access modes
  same_labels,  // the same two ops in either order, whatever the modes
  certainty,    // every race of one certainty
};

std::string race_key(const Program& p, const Race& r, race_level level) {
  const std::string certainty = r.inferred ? "possible" : "certain";
  switch (level) {
    case race_level::same_ops:
      return fmt::format("{}{}{}{}{}{}{}{}{}", certainty, sep, side_key(p, r.first), sep,
                         mode_letter(r.first_mode), sep, side_key(p, r.second), sep,
                         mode_letter(r.second_mode));
    case race_level::same_labels: {
      std::string a = side_key(p, r.first);
      std::string b = side_key(p, r.second);
      if (b < a) std::swap(a, b);
      return fmt::format("{}{}{}{}{}", certainty, sep, a, sep, b);
    }
    case race_level::certainty: return certainty;
  }
  return certainty;
}

// "stream 13", "stream 13 and stream 14", "stream 1, stream 2 and 6 more streams".
std::string names_text(const std::vector<std::string>& names, std::string_view plural) {
  constexpr std::size_t shown = 3;
  if (names.size() <= 1) return names.empty() ? std::string() : names.front();
  if (names.size() <= shown)
    return fmt::format("{} and {}", fmt::join(std::vector<std::string>(names.begin(), names.end() - 1), ", "),
                       names.back());
  return fmt::format("{} and {} more {}",
                     fmt::join(std::vector<std::string>(names.begin(), names.begin() + shown), ", "),
                     names.size() - shown, plural);
}

constexpr std::string_view inferred_note =
    " If the ops touch disjoint bytes (each kernel on its own part of the allocation), there is no race: "
    "a kernel's accesses are inferred from its pointer parameters, not known by their bytes.";

}  // namespace

void RaceGroups::add(const Race& race) {
  ++races_;
  const auto [it, inserted] =
      index_.try_emplace(race_key(*program_, race, race_level::same_ops), groups_.size());
  if (inserted) groups_.emplace_back();
  Group& g = groups_[it->second];
  ++g.count;
  if (g.first.size() < max_listed_instances) g.first.push_back(race);
  for (const op_id id : {race.first, race.second}) {
    if (const auto& s = program_->ops()[id].stream) g.streams.insert(*s);
  }
  g.buffers.insert(race.buffer);
}

void RaceGroups::merge(Group& into, const Group& from) {
  into.count += from.count;
  into.first.insert(into.first.end(), from.first.begin(), from.first.end());
  // Instances in the order races are found: by the later op, then the earlier.
  std::sort(into.first.begin(), into.first.end(), [](const Race& a, const Race& b) {
    return a.second != b.second ? a.second < b.second : a.first < b.first;
  });
  if (into.first.size() > max_listed_instances) into.first.resize(max_listed_instances);
  into.streams.insert(from.streams.begin(), from.streams.end());
  into.buffers.insert(from.buffers.begin(), from.buffers.end());
  into.mixed = into.mixed || from.mixed;
}

std::vector<Finding> RaceGroups::findings(std::size_t max_findings) const {
  const Program& p = *program_;
  std::vector<Group> groups = groups_;
  for (const race_level level : {race_level::same_labels, race_level::certainty}) {
    if (groups.size() <= max_findings) break;
    std::vector<Group> coarser;
    std::map<std::string, std::size_t> index;
    for (const Group& g : groups) {
      const auto [it, inserted] = index.try_emplace(race_key(p, g.first.front(), level), coarser.size());
      if (inserted) {
        coarser.push_back(g);
        continue;
      }
      Group& into = coarser[it->second];
      if (race_key(p, into.first.front(), race_level::same_labels) !=
          race_key(p, g.first.front(), race_level::same_labels))
        into.mixed = true;
      merge(into, g);
    }
    groups = std::move(coarser);
  }

  // Findings in the order of their first races: by the later op, then the earlier.
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    const Race& x = a.first.front();
    const Race& y = b.first.front();
    return x.second != y.second ? x.second < y.second : x.first < y.first;
  });
  std::vector<Finding> out;
  out.reserve(groups.size());
  for (const Group& g : groups) {
    const Race& r = g.first.front();
    Finding f = race_finding(p, r);
    f.count = g.count;
    f.instances.clear();
    for (const Race& x : g.first)
      f.instances.push_back(Instance{{op_ref(p, x.first), op_ref(p, x.second)}, describe_race(p, x), x});
    f.streams.clear();
    for (const stream_id s : g.streams) f.streams.push_back(p.streams()[s].name);
    if (g.count > 1) {
      std::vector<std::string> buffers{r.buffer};
      for (const std::string& b : g.buffers) {
        if (b != r.buffer) buffers.push_back(b);
      }
      const std::string where =
          fmt::format("on {} ({} {})", names_text(f.streams, "streams"),
                      buffers.size() == 1 ? "buffer" : "buffers", names_text(buffers, "buffers"));
      if (!g.mixed) {
        f.message = fmt::format(
            "{} and {} race {} times: pairs of them touch the same bytes, at least one writing, and nothing "
            "orders them, {}. The first: {}.",
            op_words(p, r.first), op_words(p, r.second), g.count, where, describe_race(p, r));
        f.fix = fmt::format("Order each {} after the {} it races with, as for the first: {}.",
                            op_words(p, r.second), op_words(p, r.first), race_fix(p, r));
      } else {
        f.message = fmt::format(
            "{} pairs of ops touch the same bytes, at least one writing, and nothing orders them, {}. "
            "The first: {}.",
            g.count, where, describe_race(p, r));
        f.fix = fmt::format("Order each pair, as for the first: {}.", race_fix(p, r));
      }
    }
    if (f.possible) {
      if (!f.fix.ends_with('.')) f.fix += '.';
      f.fix += inferred_note;
    }
    out.push_back(std::move(f));
  }
  return out;
}

namespace {

std::string finding_key(const Finding& f, bool by_ops) {
  std::string key = fmt::format("{}{}{}", f.rule, sep, static_cast<int>(f.level));
  if (!by_ops) return key;
  for (const OpRef& ref : f.ops) key += fmt::format("{}{}{}{}", sep, ref.kind, sep, ref.label);
  return key;
}

void ensure_instances(Finding& f) {
  if (f.instances.empty()) f.instances.push_back(Instance{f.ops, f.message, f.race});
}

void add_optional(std::optional<double>& into, const std::optional<double>& value) {
  if (value) into = into.value_or(0.0) + *value;
}

// One finding for several of the same pattern: the first's words, every one counted.
Finding merged(std::vector<Finding> members) {
  Finding f = std::move(members.front());
  ensure_instances(f);
  if (members.size() == 1) return f;
  const std::string first_message = f.message;
  for (std::size_t i = 1; i < members.size(); ++i) {
    Finding& m = members[i];
    ensure_instances(m);
    f.count += m.count;
    for (Instance& in : m.instances) {
      if (f.instances.size() < max_listed_instances) f.instances.push_back(std::move(in));
    }
    for (const std::string& s : m.streams) {
      if (std::find(f.streams.begin(), f.streams.end(), s) == f.streams.end()) f.streams.push_back(s);
    }
    add_optional(f.time_lost, m.time_lost);
    add_optional(f.serialized_time, m.serialized_time);
  }
  f.message = fmt::format("{} The same {} times in all; the first {} are listed.", first_message, f.count,
                          f.instances.size());
  return f;
}

std::vector<Finding> group_by(std::vector<Finding> findings, bool by_ops) {
  std::vector<std::vector<Finding>> groups;
  std::map<std::string, std::size_t> index;
  for (Finding& f : findings) {
    const auto [it, inserted] = index.try_emplace(finding_key(f, by_ops), groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(std::move(f));
  }
  std::vector<Finding> out;
  out.reserve(groups.size());
  for (std::vector<Finding>& g : groups) out.push_back(merged(std::move(g)));
  return out;
}

}  // namespace

std::vector<Finding> group_findings(std::vector<Finding> findings, std::size_t max_findings) {
  findings = group_by(std::move(findings), /*by_ops=*/true);
  if (findings.size() > max_findings) findings = group_by(std::move(findings), /*by_ops=*/false);
  return findings;
}

}  // namespace overlap::check
