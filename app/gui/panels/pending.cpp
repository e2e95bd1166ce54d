// Placeholders for the views still being written (layouts, quant, timing, sass). They are weak
// symbols: a panel file that defines the real function replaces its placeholder at link time.
// Delete this file once all four views exist.
#include <imgui.h>

#include "app/gui/model.hpp"

namespace dql::gui {

namespace {
void placeholder(const char* what) { ImGui::TextWrapped("The %s view is not part of this build yet.", what); }
}  // namespace

__attribute__((weak)) void draw_layouts(Model&, const Ui&) { placeholder("Layouts"); }
__attribute__((weak)) void draw_quant(Model&, const Ui&) { placeholder("Quantize"); }
__attribute__((weak)) void draw_timing(Model&, const Ui&) { placeholder("Timing"); }
__attribute__((weak)) void draw_sass(Model&, const Ui&) { placeholder("SASS"); }

}  // namespace dql::gui
