#version 330 core
// One triangle that covers the target. uv runs 0..1; v = 0 is the first row of the data, which
// the texture's first line holds and ImGui::Image draws at the top.
out vec2 uv;

void main() {
  vec2 p = vec2(float((gl_VertexID << 1) & 2), float(gl_VertexID & 2));
  uv = p;
  gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
