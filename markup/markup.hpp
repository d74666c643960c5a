// Text made safe inside XML and HTML (the SVG timelines, the HTML report,
// JUnit files): the five special characters become entities, and control
// bytes other than newline and tab, which XML forbids, become '?'.
#pragma once

#include <string>
#include <string_view>

namespace lockstep {

std::string escape_markup(std::string_view text);

// Bytes from outside (a live server's answer, quoted verbatim) as XML text:
// XML must be UTF-8, so each byte that is not part of a well-formed
// sequence becomes '?' before the text is escaped.
std::string xml_text(std::string_view text);

}  // namespace lockstep
