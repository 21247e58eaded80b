package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// corpus is a text cut into chunks, each encoded by one call.
type corpus struct {
	name   string
	chunks []string
	bytes  int
}

// opticks is Newton's Opticks from the Go distribution (GOROOT/src/testdata,
// 567 KB of English prose), in chunks of about chunk bytes.
func opticks(chunk int) (corpus, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return corpus{}, fmt.Errorf("go env GOROOT: %w", err)
	}
	root := strings.TrimSpace(string(out))
	var text []byte
	for _, p := range []string{"src/testdata/Isaac.Newton-Opticks.txt", "src/compress/testdata/Isaac.Newton-Opticks.txt"} {
		if text, err = os.ReadFile(filepath.Join(root, p)); err == nil {
			break
		}
	}
	if err != nil {
		return corpus{}, fmt.Errorf("Newton's Opticks from GOROOT %s: %w", root, err)
	}
	return corpus{name: "english", chunks: chunks(string(text), chunk), bytes: len(text)}, nil
}

// mixed is about size bytes of seeded mixed-script text: sentences in ten
// scripts, numbers, emoji, punctuation and code, in chunks of about chunk
// bytes.
func mixed(size, chunk int, seed uint64) corpus {
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	for b.Len() < size {
		switch r.IntN(12) {
		case 0:
			b.WriteString(codeLines[r.IntN(len(codeLines))])
		default:
			words := scriptWords[r.IntN(len(scriptWords))]
			sep := " "
			if words.noSpaces {
				sep = ""
			}
			for n := 4 + r.IntN(12); n > 0; n-- {
				b.WriteString(words.w[r.IntN(len(words.w))])
				switch r.IntN(16) {
				case 0:
					fmt.Fprintf(&b, " %d", r.IntN(100000))
				case 1:
					b.WriteString(" " + emoji[r.IntN(len(emoji))])
				case 2:
					b.WriteString(",")
				}
				if n > 1 {
					b.WriteString(sep)
				}
			}
			b.WriteString(words.stop)
			if r.IntN(4) == 0 {
				b.WriteString("\n")
			} else {
				b.WriteString(" ")
			}
		}
	}
	text := b.String()
	return corpus{name: "mixed", chunks: chunks(text, chunk), bytes: len(text)}
}

// chunks cuts text into pieces of about n bytes, at character boundaries.
func chunks(text string, n int) []string {
	var out []string
	for len(text) > 0 {
		i := min(n, len(text))
		for i < len(text) && !utf8.RuneStart(text[i]) {
			i++
		}
		out = append(out, text[:i])
		text = text[i:]
	}
	return out
}

var scriptWords = []struct {
	w        []string
	noSpaces bool
	stop     string
}{
	{w: strings.Fields("the light of rays is refracted through a prism and the colours which it shows are not changed by reflection model training reward policy gradient"), stop: "."},
	{w: strings.Fields("光 的 折射 实验 表明 白光 由 多种 颜色 组成 模型 训练 奖励 策略 梯度 数据"), noSpaces: true, stop: "。"},
	{w: strings.Fields("光は プリズムを 通ると 色に 分かれます この 実験は ニュートンが 行いました モデルの 学習"), noSpaces: true, stop: "。"},
	{w: strings.Fields("빛은 프리즘을 통과하면 여러 색으로 나뉩니다 모델 학습 보상 정책"), stop: "."},
	{w: strings.Fields("свет проходит через призму и разделяется на цвета обучение модели награда политика"), stop: "."},
	{w: strings.Fields("το φως διαθλάται μέσα από το πρίσμα και χωρίζεται σε χρώματα"), stop: "."},
	{w: strings.Fields("الضوء ينكسر عبر المنشور وينقسم إلى ألوان تدريب النموذج المكافأة السياسة"), stop: "."},
	{w: strings.Fields("प्रकाश प्रिज्म से गुजरने पर रंगों में बंट जाता है मॉडल प्रशिक्षण पुरस्कार नीति"), stop: "।"},
	{w: strings.Fields("แสง ผ่าน ปริซึม แล้ว แยก เป็น สี ต่างๆ การ ฝึก โมเดล รางวัล นโยบาย"), noSpaces: true, stop: " "},
	{w: strings.Fields("ánh sáng đi qua lăng kính và tách thành nhiều màu huấn luyện mô hình phần thưởng chính sách"), stop: "."},
}

var (
	emoji     = []string{"😀", "👍🏽", "👨‍👩‍👧", "🇯🇵", "1️⃣", "❤️", "✨", "🤖"}
	codeLines = []string{
		"def reward(completion):\n    return 1.0 if \"42\" in completion else 0.0\n",
		"func main() {\n\tfmt.Println(\"hello\")\n}\n",
		"for (int i = 0; i < n; i++) {\n        sum += a[i] * b[i];\n}\n",
		"{\"role\": \"user\", \"content\": \"2 + 2 = ?\"}\n",
	}
)
