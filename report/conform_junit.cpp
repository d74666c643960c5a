#include "report/conform_junit.hpp"

#include <fmt/format.h>

#include "markup/markup.hpp"

namespace lockstep {

// JUnit XML as CI systems read it (Jenkins, GitLab, GitHub reporters): one
// test case per vector file, classname lockstep.conform and the path as its
// name; a failure carries the verdict line as its message and the whole
// verdict (with a live server's view of the model) as its text.
std::string conform_junit(const std::vector<VectorFileResult>& results, const std::string& against, const std::string& bug) {
  std::size_t failures = 0, skipped = 0;
  double total = 0;
  for (const auto& result : results) {
    failures += result.verdict.status == VectorVerdict::Status::fail ? 1 : 0;
    skipped += result.verdict.status == VectorVerdict::Status::skip ? 1 : 0;
    total += result.seconds;
  }
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format("<testsuites tests=\"{0}\" failures=\"{1}\" errors=\"0\" skipped=\"{2}\" time=\"{3:.3f}\">\n"
                     "<testsuite name=\"lockstep.conform\" tests=\"{0}\" failures=\"{1}\" errors=\"0\" "
                     "skipped=\"{2}\" time=\"{3:.3f}\">\n",
                     results.size(), failures, skipped, total);
  xml += fmt::format("  <properties><property name=\"against\" value=\"{}\"/>", xml_text(against));
  if (bug != "none") xml += fmt::format("<property name=\"inject-bug\" value=\"{}\"/>", xml_text(bug));
  xml += "</properties>\n";
  for (const auto& result : results) {
    xml += fmt::format("  <testcase classname=\"lockstep.conform\" name=\"{}\" time=\"{:.3f}\"", xml_text(result.file),
                       result.seconds);
    const auto line = verdict_line(result.file, result.verdict);
    switch (result.verdict.status) {
      case VectorVerdict::Status::ok:
        xml += "/>\n";
        break;
      case VectorVerdict::Status::skip:
        xml += fmt::format(">\n    <skipped message=\"{}\"/>\n  </testcase>\n", xml_text(result.verdict.message));
        break;
      case VectorVerdict::Status::fail:
        xml += fmt::format(">\n    <failure message=\"{}\">{}</failure>\n  </testcase>\n",
                           xml_text(line.substr(0, line.find('\n'))), xml_text(line));
        break;
    }
  }
  xml += "</testsuite>\n</testsuites>\n";
  return xml;
}

}  // namespace lockstep
