# A .cu file of src/cuda/ as host C++: each launch `kernel<<<grid, block, shared, stream>>>(args);`
# becomes strata_emu::launch(grid, block, shared, [=] { kernel(args); }) (by value: a recorded
# graph runs it later), and the dynamic
# shared array the block's buffer. Usage: transform.py IN.cu OUT.cpp
import re, sys
src = open(sys.argv[1]).read()
src = src.replace('extern __shared__ float shared[];', 'float* shared = static_cast<float*>(::strata_emu::dynamic_shared());')
# clang-format may break a long launch between the kernel's name and `<<<`.
pat = re.compile(r'([A-Za-z_][\w:]*(?:<[^;<>]*(?:<[^;<>]*>)?[^;<>]*>)?)\s*<<<(.*?)>>>\((.*?)\);', re.S)
def rep(m):
    name, config, args = m.group(1), m.group(2), m.group(3)
    parts, depth, cur = [], 0, ''
    for ch in config:
        if ch in '(<': depth += 1
        if ch in ')>': depth -= 1
        if ch == ',' and depth == 0:
            parts.append(cur.strip()); cur = ''
        else:
            cur += ch
    parts.append(cur.strip())
    grid, block = parts[0], parts[1]
    smem = parts[2] if len(parts) > 2 else '0'
    return f'::strata_emu::launch(dim3({grid}), dim3({block}), size_t({smem}), [=] {{ {name}({args}); }});'
out, n = pat.subn(rep, src)
sys.stderr.write(f'{sys.argv[1]}: {n} launches\n')
open(sys.argv[2], 'w').write(out)
