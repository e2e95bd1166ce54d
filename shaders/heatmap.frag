#version 330 core
// An index map or error map as a heatmap. The data texture holds one value per cell (R32F); the
// colour comes from a map computed here: a viridis-like ramp for ordered values, or a qualitative
// palette of eight hues (value mod 8) for categories such as the column n or the slot of a word.
in vec2 uv;
out vec4 colour;

uniform sampler2D u_data;  // cols x rows, row 0 = the top row of the picture
uniform ivec2 u_cells;     // cols, rows
uniform vec2 u_range;      // the values drawn at the two ends of the ramp
uniform int u_map;         // 0 viridis-like, 1 qualitative, 2 magnitude (dark to bright)
uniform vec2 u_pixels;     // the picture's size in pixels
uniform float u_grid;      // 1: outline every cell when cells are large enough

// A viridis-like ramp: linear between five anchors (dark violet, blue, teal, green, yellow), so
// lightness rises evenly from 0 to 1.
vec3 ramp(float t) {
  const vec3 a0 = vec3(0.267, 0.004, 0.329);
  const vec3 a1 = vec3(0.231, 0.322, 0.545);
  const vec3 a2 = vec3(0.129, 0.569, 0.549);
  const vec3 a3 = vec3(0.369, 0.788, 0.384);
  const vec3 a4 = vec3(0.992, 0.906, 0.145);
  float x = clamp(t, 0.0, 1.0) * 4.0;
  if (x < 1.0) return mix(a0, a1, x);
  if (x < 2.0) return mix(a1, a2, x - 1.0);
  if (x < 3.0) return mix(a2, a3, x - 2.0);
  return mix(a3, a4, x - 3.0);
}

vec3 category(int i) {
  int k = i - 8 * (i / 8);
  if (k < 0) k += 8;
  if (k == 0) return vec3(0.90, 0.62, 0.00);
  if (k == 1) return vec3(0.34, 0.71, 0.91);
  if (k == 2) return vec3(0.00, 0.62, 0.45);
  if (k == 3) return vec3(0.94, 0.89, 0.26);
  if (k == 4) return vec3(0.00, 0.45, 0.70);
  if (k == 5) return vec3(0.84, 0.37, 0.00);
  if (k == 6) return vec3(0.80, 0.47, 0.65);
  return vec3(0.60, 0.60, 0.60);
}

void main() {
  vec2 cellf = uv * vec2(u_cells);
  ivec2 cell = clamp(ivec2(floor(cellf)), ivec2(0), u_cells - 1);
  float v = texelFetch(u_data, cell, 0).r;
  vec3 c;
  if (v != v) {
    c = vec3(0.25);  // no value (NaN): grey
  } else if (u_map == 1) {
    c = category(int(floor(v + 0.5)));
  } else {
    float span = u_range.y - u_range.x;
    float t = span > 0.0 ? clamp((v - u_range.x) / span, 0.0, 1.0) : 0.5;
    c = u_map == 0 ? ramp(t) : mix(vec3(0.05, 0.05, 0.12), vec3(1.0, 0.85, 0.35), sqrt(t));
  }
  // Thin dark lines between cells, when a cell is at least 6 pixels wide and tall.
  vec2 cell_px = u_pixels / vec2(u_cells);
  if (u_grid > 0.5 && min(cell_px.x, cell_px.y) >= 6.0) {
    vec2 f = fract(cellf) * cell_px;
    if (f.x < 1.0 || f.y < 1.0) c *= 0.55;
  }
  colour = vec4(clamp(c, 0.0, 1.0), 1.0);
}
