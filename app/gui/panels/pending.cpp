// Placeholders for the views still being written (sass). They are weak
// symbols: a panel file that defines the real function replaces its placeholder at link time.
// Delete this file once all four views exist.
#include <imgui.h>

#include "app/gui/model.hpp"

namespace dql::gui {

namespace {
void placeholder(const char* what) { ImGui::TextWrapped("The %s view is not part of this build yet.", what); }
}  // namespace

__attribute__((weak)) void draw_sass(Model&, const Ui&) { placeholder("SASS"); }

}  // namespace dql::gui
