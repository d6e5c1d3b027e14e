#include "podgrouper/plugins/karta.h"

#include <chrono>
#include <regex>

#include "binder/log.h"
#include "podgrouper/json_util.h"
#include "podgrouper/plugins/karta_path.h"
#include "podgrouper/plugins/plugins.h"

namespace gantry::podgrouper::karta {

namespace {

std::optional<std::string> OptString(const kube::Object& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

Result<std::optional<TopologySpec>> ReadTopology(const kube::Object& parent,
                                                 const std::string& where) {
  auto it = parent.find("topology");
  if (it == parent.end() || it->is_null()) return std::optional<TopologySpec>{};
  if (!it->is_object()) return Error{where + ".topology: not an object"};
  return std::optional<TopologySpec>{
      TopologySpec{OptString(*it, "topologyName").value_or(""),
                   OptString(*it, "requiredTopologyLevel").value_or(""),
                   OptString(*it, "preferredTopologyLevel").value_or("")}};
}

std::optional<std::string> CheckTopology(const TopologySpec& t) {
  if (t.topology.empty()) return "topology constraint must include topology name";
  if (t.preferred.empty() && t.required.empty()) {
    return "topology constraint must include preferred or required topology level";
  }
  return std::nullopt;
}

Result<Component> ReadComponent(const kube::Object& c, const std::string& where) {
  if (!c.is_object()) return Error{where + ": not an object"};
  Component out;
  out.name = OptString(c, "name").value_or("");
  out.owner_ref = OptString(c, "ownerRef");
  if (auto k = c.find("kind"); k != c.end() && k->is_object()) {
    out.group = OptString(*k, "group").value_or("");
    out.version = OptString(*k, "version").value_or("");
    out.kind = OptString(*k, "kind").value_or("");
  }
  if (auto s = c.find("specDefinition"); s != c.end() && s->is_object()) {
    out.has_pod_definition = s->contains("podTemplateSpecPath") || s->contains("podSpecPath") ||
                             s->contains("fragmentedPodSpecDefinition");
  }
  if (auto s = c.find("scaleDefinition"); s != c.end() && s->is_object()) {
    out.has_scale = true;
    out.replicas_path = OptString(*s, "replicasPath");
    out.min_replicas_path = OptString(*s, "minReplicasPath");
  }
  out.instance_id_path = OptString(c, "instanceIdPath");
  if (auto p = c.find("podSelector"); p != c.end() && p->is_object()) {
    if (auto t = p->find("componentTypeSelector"); t != p->end() && t->is_object()) {
      out.type_key_path = OptString(*t, "keyPath").value_or("");
      out.type_value = OptString(*t, "value");
    }
  }
  return out;
}

// Kubernetes' IsDNS1123Subdomain, with its message.
std::optional<std::string> Dns1123SubdomainError(const std::string& name) {
  static const std::regex dns1123(
      R"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)");
  std::string errors;
  if (name.size() > 253) errors = "must be no more than 253 characters";
  if (!std::regex_match(name, dns1123)) {
    if (!errors.empty()) errors += "; ";
    errors +=
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
        "regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
  }
  if (errors.empty()) return std::nullopt;
  return errors;
}

// Go's fmt %v of a JSON value the way Karta prints a grouping key.
std::string ValueText(const kube::Object& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// A replica count at `path` on the top owner, 0 when missing. A list of counts (one per
// instance) comes only with instanceIdPath, which Validate rejects, so it is an error here.
Result<int32_t> ReadCount(const std::string& path, const kube::Object& top,
                          const std::string& component) {
  auto v = EvaluatePath(path, top);
  if (!v.ok()) return Error{"component " + component + ": " + v.error()};
  const kube::Object& got = v.value();
  if (got.is_null()) return 0;
  if (got.is_number_integer()) return static_cast<int32_t>(got.get<int64_t>());
  return Error{"component " + component + ": " + path + " on " + Describe(top) + " is a " +
               got.type_name() + ", not a replica count"};
}

std::string PodGroupName(const kube::Object& top, const std::vector<std::string>& keys) {
  std::string out = "pg-" + kube::UidOf(top);
  for (const auto& k : keys) out += "-" + k;
  return out;
}

}  // namespace

Result<Karta> Karta::FromObject(const kube::Object& object) {
  Karta k;
  k.name = kube::NameOf(object);
  std::string where = "Karta " + k.name;
  k.deleting = At(object, {"metadata", "deletionTimestamp"}) != nullptr &&
               !At(object, {"metadata", "deletionTimestamp"})->is_null();
  const kube::Object* sd = At(object, {"spec", "structureDefinition"});
  if (sd == nullptr || !sd->is_object()) {
    return Error{where + ": spec.structureDefinition missing or not an object"};
  }
  if (auto root = sd->find("rootComponent"); root != sd->end()) {
    auto c = ReadComponent(*root, where + " spec.structureDefinition.rootComponent");
    if (!c.ok()) return Error{c.error()};
    k.components.push_back(std::move(c).value());
  } else {
    k.components.push_back(Component{});
  }
  if (auto children = sd->find("childComponents"); children != sd->end() && !children->is_null()) {
    if (!children->is_array()) {
      return Error{where + ": spec.structureDefinition.childComponents is not a list"};
    }
    for (size_t i = 0; i < children->size(); ++i) {
      auto c = ReadComponent((*children)[i], where + " spec.structureDefinition.childComponents[" +
                                                 std::to_string(i) + "]");
      if (!c.ok()) return Error{c.error()};
      k.components.push_back(std::move(c).value());
    }
  }
  const kube::Object* gang = At(object, {"spec", "instructions", "gangScheduling"});
  if (gang == nullptr || gang->is_null()) return k;
  if (!gang->is_object())
    return Error{where + ": spec.instructions.gangScheduling is not an object"};
  std::string gwhere = where + " spec.instructions.gangScheduling";
  if (auto pg = gang->find("podGroup"); pg != gang->end() && pg->is_object()) {
    k.pod_group_name = OptString(*pg, "name").value_or("");
    auto topo = ReadTopology(*pg, gwhere + ".podGroup");
    if (!topo.ok()) return Error{topo.error()};
    k.pod_group_topology = topo.value();
    if (auto subs = pg->find("subGroups"); subs != pg->end() && subs->is_array()) {
      for (size_t i = 0; i < subs->size(); ++i) {
        const auto& s = (*subs)[i];
        std::string swhere = gwhere + ".podGroup.subGroups[" + std::to_string(i) + "]";
        if (!s.is_object()) return Error{swhere + ": not an object"};
        auto st = ReadTopology(s, swhere);
        if (!st.ok()) return Error{st.error()};
        k.sub_groups.push_back({OptString(s, "componentName").value_or(""), st.value()});
      }
    }
  }
  if (auto pgs = gang->find("podGroups"); pgs != gang->end() && pgs->is_array()) {
    for (const auto& pg : *pgs) {
      if (!pg.is_object()) return Error{gwhere + ".podGroups: an entry is not an object"};
      PodGroupDefinition def{OptString(pg, "name").value_or(""), {}};
      if (auto members = pg.find("members"); members != pg.end() && members->is_array()) {
        for (const auto& m : *members) {
          MemberDefinition md{OptString(m, "componentName").value_or(""), {}, {}};
          for (const char* field : {"filters", "groupByKeyPaths"}) {
            auto list = m.find(field);
            if (list == m.end() || !list->is_array()) continue;
            for (const auto& p : *list) {
              if (!p.is_string())
                return Error{gwhere + ".podGroups[" + def.name + "]." + field +
                             ": an entry is not a string"};
              (std::string(field) == "filters" ? md.filters : md.group_by_key_paths)
                  .push_back(p.get<std::string>());
            }
          }
          def.members.push_back(std::move(md));
        }
      }
      k.pod_groups.push_back(std::move(def));
    }
  }
  k.has_gang_scheduling = k.pod_group_name.has_value() || !k.pod_groups.empty();
  return k;
}

std::optional<std::string> Karta::Validate() const {
  std::string where = "Karta " + name + ": ";
  std::map<std::string, int> seen;
  for (const auto& c : components) {
    if (c.name.empty()) return where + "a component has no name";
    if (++seen[c.name] > 1) return where + "component " + c.name + " is defined twice";
  }
  for (const auto& c : components) {
    if (c.owner_ref && seen.count(*c.owner_ref) == 0) {
      return where + "component " + c.name + " has ownerRef " + *c.owner_ref +
             ", which is not a component";
    }
    if (c.instance_id_path) {
      return where + "component " + c.name +
             " has instanceIdPath (several instances of one component), which Gantry's Karta "
             "grouper does not support";
    }
    for (const auto* p : {&c.replicas_path, &c.min_replicas_path, &c.type_key_path}) {
      if (!*p) continue;
      auto parsed = Path::Parse(**p);
      if (!parsed.ok()) return where + "component " + c.name + ": " + parsed.error();
    }
  }
  for (const auto& pg : pod_groups) {
    for (const auto& m : pg.members) {
      for (const auto& p : m.filters) {
        auto parsed = Path::Parse(p);
        if (!parsed.ok()) return where + "podGroups[" + pg.name + "] filter: " + parsed.error();
      }
      for (const auto& p : m.group_by_key_paths) {
        auto parsed = Path::Parse(p);
        if (!parsed.ok())
          return where + "podGroups[" + pg.name + "] groupByKeyPaths: " + parsed.error();
      }
    }
  }
  return std::nullopt;
}

const Component* Karta::Find(const std::string& n) const {
  for (const auto& c : components) {
    if (c.name == n) return &c;
  }
  return nullptr;
}

std::vector<const Component*> Karta::ChildrenOf(const std::string& n) const {
  std::vector<const Component*> out;
  for (const auto& c : components) {
    if (c.owner_ref && *c.owner_ref == n) out.push_back(&c);
  }
  return out;
}

bool Karta::AnyScaleDefinition() const {
  for (const auto& c : components) {
    if (c.has_scale) return true;
  }
  return false;
}

Result<Metadata> KartaGrouper::Group(const kube::Object& top_owner, const kube::Object& pod,
                                     const std::vector<kube::Object>& owners) const {
  if (!karta_.has_gang_scheduling) return defaults_->Group(top_owner, pod, owners);
  if (karta_.pod_group_name) return GroupV2(top_owner, pod);
  return GroupAlpha(top_owner, pod);
}

Result<Metadata> KartaGrouper::GroupV2(const kube::Object& top, const kube::Object& pod) const {
  auto base = defaults_->Group(top, pod, {});
  if (!base.ok()) return base;
  Metadata md = std::move(base).value();
  md.name = PodGroupName(top, {*karta_.pod_group_name});
  md.min_sub_group.reset();
  md.sub_groups.clear();
  if (karta_.pod_group_topology) {
    if (auto bad = CheckTopology(*karta_.pod_group_topology)) return Error{*bad};
    md.topology = {karta_.pod_group_topology->topology, karta_.pod_group_topology->required,
                   karta_.pod_group_topology->preferred};
  }
  for (const auto& mapping : karta_.sub_groups) {
    if (mapping.component.empty()) return Error{"subgroup component name cannot be empty"};
    if (karta_.Find(mapping.component) == nullptr) {
      return Error{"component " + mapping.component + " not found in Karta " + karta_.name};
    }
    auto scale = SubtreeScale(mapping.component, top);
    if (!scale.ok()) return Error{scale.error()};
    if (scale.value() == 0) {
      return Error{"component " + mapping.component + " must expose a replica scale definition"};
    }
    SubGroupMetadata sg{.name = mapping.component, .min_available = scale.value()};
    if (mapping.topology) {
      if (auto bad = CheckTopology(*mapping.topology)) return Error{*bad};
      sg.topology = TopologyConstraint{mapping.topology->topology, mapping.topology->required,
                                       mapping.topology->preferred};
    }
    auto in = PodMatchesSubtree(mapping.component, pod);
    if (!in.ok()) return Error{in.error()};
    if (in.value()) sg.pods.push_back(kube::NameOf(pod));
    md.sub_groups.push_back(std::move(sg));
  }
  if (!md.sub_groups.empty()) {
    md.min_sub_group = static_cast<int32_t>(md.sub_groups.size());
    md.min_available = 0;
  } else {
    auto scale = SubtreeScale(karta_.components.front().name, top);
    if (!scale.ok()) return Error{scale.error()};
    md.min_available = scale.value();
  }
  return md;
}

Result<Metadata> KartaGrouper::GroupAlpha(const kube::Object& top, const kube::Object& pod) const {
  const std::string pod_where = kube::NamespaceOf(pod) + "/" + kube::NameOf(pod);
  // The pod's component: the only leaf, else the leaf whose selector the pod matches.
  std::vector<const Component*> leaves;
  for (const auto& c : karta_.components) {
    if (c.has_pod_definition) leaves.push_back(&c);
  }
  const Component* pod_component = leaves.size() == 1 ? leaves.front() : nullptr;
  if (pod_component == nullptr) {
    for (const Component* leaf : leaves) {
      auto m = PodMatches(*leaf, pod);
      if (!m.ok()) {
        return Error{"failed to check if pod matches component " + leaf->name + ": " + m.error()};
      }
      if (m.value()) {
        pod_component = leaf;
        break;
      }
    }
  }
  if (pod_component == nullptr) return Error{"no component found for pod " + kube::NameOf(pod)};
  // Member definitions naming the component or an ancestor; direct mentions first.
  struct Candidate {
    std::string component;
    const MemberDefinition* member;
  };
  std::vector<Candidate> direct, inherited;
  std::string current = pod_component->name;
  std::map<std::string, bool> visited;
  while (!current.empty() && !visited[current]) {
    visited[current] = true;
    for (const auto& pg : karta_.pod_groups) {
      for (const auto& m : pg.members) {
        if (m.component == current) {
          (current == pod_component->name ? direct : inherited).push_back({current, &m});
        }
      }
    }
    const Component* c = karta_.Find(current);
    current = c != nullptr && c->owner_ref ? *c->owner_ref : "";
  }
  direct.insert(direct.end(), inherited.begin(), inherited.end());
  const Candidate* chosen = nullptr;
  for (const auto& cand : direct) {
    bool passes = true;
    for (const auto& f : cand.member->filters) {
      auto v = EvaluatePath(f, pod);
      if (!v.ok()) {
        return Error{"failed to evaluate filters for component " + cand.component + ": " +
                     v.error()};
      }
      if (v.value() != true) {
        passes = false;
        break;
      }
    }
    if (passes) {
      chosen = &cand;
      break;
    }
  }
  if (chosen == nullptr) {
    return Error{"pod " + pod_where + " does not match any Karta pod group member definition"};
  }
  auto base = defaults_->Group(top, pod, {});
  if (!base.ok()) return base;
  Metadata md = std::move(base).value();
  std::vector<std::string> keys;
  for (const auto& path : chosen->member->group_by_key_paths) {
    auto v = EvaluatePath(path, pod);
    if (!v.ok())
      return Error{"failed to extract group key from path \"" + path + "\": " + v.error()};
    if (v.value().is_null() || v.value() == "") {
      std::string message = "failed to extract group key from path \"";
      message.append(path).append("\" of pod ").append(pod_where).append(": query result is empty");
      return Error{message};
    }
    keys.push_back(ValueText(v.value()));
  }
  md.name = PodGroupName(top, keys);
  if (!keys.empty()) {
    if (auto bad = Dns1123SubdomainError(md.name)) {
      std::string list;
      for (const auto& k : keys) list += (list.empty() ? "" : " ") + k;
      return Error{"Karta grouping keys [" + list +
                   "] produce invalid Kubernetes PodGroup name \"" + md.name + "\": " + *bad};
    }
  }
  auto scale = SubtreeScale(chosen->component, top);
  if (!scale.ok()) return Error{scale.error()};
  md.min_available = scale.value();
  return md;
}

Result<int32_t> KartaGrouper::SubtreeScale(const std::string& component,
                                           const kube::Object& top) const {
  return karta_.AnyScaleDefinition() ? ScaleByDefinition(component, top) : ScaleByLeaves(component);
}

Result<int32_t> KartaGrouper::ScaleByDefinition(const std::string& name,
                                                const kube::Object& top) const {
  const Component* c = karta_.Find(name);
  if (c == nullptr) return Error{"component " + name + " not found in Karta " + karta_.name};
  int32_t own = 0;
  if (c->has_scale) {
    int32_t replicas = 0, min_replicas = 0;
    if (c->replicas_path) {
      auto r = ReadCount(*c->replicas_path, top, name);
      if (!r.ok()) return r;
      replicas = r.value();
    }
    if (c->min_replicas_path) {
      auto r = ReadCount(*c->min_replicas_path, top, name);
      if (!r.ok()) return r;
      min_replicas = r.value();
    }
    own = min_replicas > 0 ? min_replicas : (replicas > 0 ? replicas : 0);
  }
  auto children = karta_.ChildrenOf(name);
  if (children.empty()) return own;
  int32_t sum = 0;
  for (const Component* child : children) {
    auto s = ScaleByDefinition(child->name, top);
    if (!s.ok()) return s;
    sum += s.value();
  }
  if (sum == 0) return own;
  if (own == 0) return sum;
  return own * sum;
}

Result<int32_t> KartaGrouper::ScaleByLeaves(const std::string& name) const {
  const Component* c = karta_.Find(name);
  if (c == nullptr) return Error{"component " + name + " not found in Karta " + karta_.name};
  if (c->has_pod_definition) return 1;
  int32_t count = 0;
  for (const Component* child : karta_.ChildrenOf(name)) {
    auto s = ScaleByLeaves(child->name);
    if (!s.ok()) return s;
    count += s.value();
  }
  return count;
}

Result<bool> KartaGrouper::PodMatches(const Component& c, const kube::Object& pod) const {
  if (!c.type_key_path) return false;
  auto v = EvaluatePath(*c.type_key_path, pod);
  if (!v.ok()) return Error{v.error()};
  if (!c.type_value) return !v.value().is_null();
  return v.value() == *c.type_value;
}

Result<bool> KartaGrouper::PodMatchesSubtree(const std::string& name,
                                             const kube::Object& pod) const {
  const Component* c = karta_.Find(name);
  if (c == nullptr) return Error{"component " + name + " not found in Karta " + karta_.name};
  auto m = PodMatches(*c, pod);
  if (!m.ok() || m.value()) return m;
  for (const Component* child : karta_.ChildrenOf(name)) {
    auto cm = PodMatchesSubtree(child->name, pod);
    if (!cm.ok() || cm.value()) return cm;
  }
  return false;
}

namespace {
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

bool KartaFallback::crd_missing() const { return NowNs() < retry_after_ns_.load(); }

Result<std::optional<Karta>> KartaFallback::KartaFor(const std::string& group,
                                                     const std::string& version,
                                                     const std::string& kind) const {
  auto list =
      cluster_.ListKartas({{kGroupLabel, group}, {kVersionLabel, version}, {kKindLabel, kind}});
  if (!list.ok()) {
    if (list.error->kind == ReadError::Kind::kNotFound) {
      // The Karta CRD is not installed: KAI does not ask again for a minute.
      retry_after_ns_.store(NowNs() + std::chrono::nanoseconds(std::chrono::minutes(1)).count());
      return Error{"Karta CRD is not installed: " + list.error->message};
    }
    return Error{list.error->message};
  }
  std::vector<Karta> matching;
  for (const auto& object : list.value) {
    auto k = Karta::FromObject(*object);
    if (!k.ok()) {
      binder::Log("podgrouper: invalid Karta, skipping generic GVK fallback: " + k.error());
      continue;
    }
    const Component& root = k.value().components.front();
    if (root.group != group || root.version != version || root.kind != kind) continue;
    if (k.value().deleting) continue;
    if (root.name.empty() && k.value().components.size() == 1) continue;  // empty Karta
    if (!k.value().has_gang_scheduling) continue;
    if (auto bad = k.value().Validate()) {
      binder::Log("podgrouper: invalid Karta, skipping generic GVK fallback: " + *bad);
      continue;
    }
    matching.push_back(std::move(k).value());
  }
  std::string gvk = group + "/" + version + ", Kind=" + kind;
  if (matching.size() > 1) {
    return Error{"found multiple Kartas with gang scheduling instructions for gvk " + gvk};
  }
  if (matching.empty()) return std::optional<Karta>{};
  return std::optional<Karta>{std::move(matching.front())};
}

std::shared_ptr<const Grouper> KartaFallback::For(const std::string& group,
                                                  const std::string& version,
                                                  const std::string& kind) const {
  if (crd_missing()) return nullptr;
  auto karta = KartaFor(group, version, kind);
  if (!karta.ok()) {
    if (!crd_missing()) {
      binder::Log("podgrouper: failed to create Karta grouper for " + group + "/" + version +
                  ", Kind=" + kind + ": " + karta.error());
    }
    return nullptr;
  }
  if (!karta.value()) return nullptr;
  return std::make_shared<KartaGrouper>(std::move(*karta.value()), defaults_);
}

}  // namespace gantry::podgrouper::karta

namespace gantry::podgrouper {

void RegisterKartaFallback(Hub& hub) {
  auto fallback = std::make_shared<karta::KartaFallback>(hub.cluster(), hub.default_ptr());
  hub.SetFallback(
      [fallback](const std::string& group, const std::string& version, const std::string& kind) {
        return fallback->For(group, version, kind);
      });
}

}  // namespace gantry::podgrouper
