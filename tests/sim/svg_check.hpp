// Checks of a drawn SVG shared by the timeline tests of simple mode
// (tests/sim/sim_test.cpp) and cluster mode (tests/cluster/): enough XML
// to judge that the file is well formed, and counts of what it draws.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace lockstep::sim::svg_check {

// Just enough XML to judge well-formedness: balanced tags, quoted
// attributes, no raw '<' or '&' in text.
inline bool well_formed(const std::string& xml, std::string& why) {
  std::vector<std::string> open;
  for (std::size_t i = 0; i < xml.size();) {
    if (xml[i] == '&') {
      const auto semi = xml.find(';', i);
      const auto entity = xml.substr(i, semi == std::string::npos ? 0 : semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;") {
        why = "bad entity at " + std::to_string(i);
        return false;
      }
      i = semi + 1;
      continue;
    }
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    const auto close = xml.find('>', i);
    if (close == std::string::npos) {
      why = "unclosed tag";
      return false;
    }
    std::string tag = xml.substr(i + 1, close - i - 1);
    i = close + 1;
    if (tag.find('<') != std::string::npos) {
      why = "'<' inside a tag";
      return false;
    }
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) {
      why = "unbalanced quotes in <" + tag + ">";
      return false;
    }
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) {
        why = "</" + tag.substr(1) + "> closes " + (open.empty() ? "nothing" : open.back());
        return false;
      }
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
  }
  if (!open.empty()) why = "<" + open.back() + "> never closed";
  return open.empty();
}

inline std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace lockstep::sim::svg_check
