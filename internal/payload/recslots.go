package payload

import "reflect"

// Code written by a loop; the markers of recRef (recursive.go): one Go type
// per recursive message a process builds, as reflect cannot make a type
// with methods of its own.

type (
	r0  struct{}
	r1  struct{}
	r2  struct{}
	r3  struct{}
	r4  struct{}
	r5  struct{}
	r6  struct{}
	r7  struct{}
	r8  struct{}
	r9  struct{}
	r10 struct{}
	r11 struct{}
	r12 struct{}
	r13 struct{}
	r14 struct{}
	r15 struct{}
	r16 struct{}
	r17 struct{}
	r18 struct{}
	r19 struct{}
	r20 struct{}
	r21 struct{}
	r22 struct{}
	r23 struct{}
	r24 struct{}
	r25 struct{}
	r26 struct{}
	r27 struct{}
	r28 struct{}
	r29 struct{}
	r30 struct{}
	r31 struct{}
	r32 struct{}
	r33 struct{}
	r34 struct{}
	r35 struct{}
	r36 struct{}
	r37 struct{}
	r38 struct{}
	r39 struct{}
	r40 struct{}
	r41 struct{}
	r42 struct{}
	r43 struct{}
	r44 struct{}
	r45 struct{}
	r46 struct{}
	r47 struct{}
	r48 struct{}
	r49 struct{}
	r50 struct{}
	r51 struct{}
	r52 struct{}
	r53 struct{}
	r54 struct{}
	r55 struct{}
	r56 struct{}
	r57 struct{}
	r58 struct{}
	r59 struct{}
	r60 struct{}
	r61 struct{}
	r62 struct{}
	r63 struct{}
)

func (r0) slot() int  { return 0 }
func (r1) slot() int  { return 1 }
func (r2) slot() int  { return 2 }
func (r3) slot() int  { return 3 }
func (r4) slot() int  { return 4 }
func (r5) slot() int  { return 5 }
func (r6) slot() int  { return 6 }
func (r7) slot() int  { return 7 }
func (r8) slot() int  { return 8 }
func (r9) slot() int  { return 9 }
func (r10) slot() int { return 10 }
func (r11) slot() int { return 11 }
func (r12) slot() int { return 12 }
func (r13) slot() int { return 13 }
func (r14) slot() int { return 14 }
func (r15) slot() int { return 15 }
func (r16) slot() int { return 16 }
func (r17) slot() int { return 17 }
func (r18) slot() int { return 18 }
func (r19) slot() int { return 19 }
func (r20) slot() int { return 20 }
func (r21) slot() int { return 21 }
func (r22) slot() int { return 22 }
func (r23) slot() int { return 23 }
func (r24) slot() int { return 24 }
func (r25) slot() int { return 25 }
func (r26) slot() int { return 26 }
func (r27) slot() int { return 27 }
func (r28) slot() int { return 28 }
func (r29) slot() int { return 29 }
func (r30) slot() int { return 30 }
func (r31) slot() int { return 31 }
func (r32) slot() int { return 32 }
func (r33) slot() int { return 33 }
func (r34) slot() int { return 34 }
func (r35) slot() int { return 35 }
func (r36) slot() int { return 36 }
func (r37) slot() int { return 37 }
func (r38) slot() int { return 38 }
func (r39) slot() int { return 39 }
func (r40) slot() int { return 40 }
func (r41) slot() int { return 41 }
func (r42) slot() int { return 42 }
func (r43) slot() int { return 43 }
func (r44) slot() int { return 44 }
func (r45) slot() int { return 45 }
func (r46) slot() int { return 46 }
func (r47) slot() int { return 47 }
func (r48) slot() int { return 48 }
func (r49) slot() int { return 49 }
func (r50) slot() int { return 50 }
func (r51) slot() int { return 51 }
func (r52) slot() int { return 52 }
func (r53) slot() int { return 53 }
func (r54) slot() int { return 54 }
func (r55) slot() int { return 55 }
func (r56) slot() int { return 56 }
func (r57) slot() int { return 57 }
func (r58) slot() int { return 58 }
func (r59) slot() int { return 59 }
func (r60) slot() int { return 60 }
func (r61) slot() int { return 61 }
func (r62) slot() int { return 62 }
func (r63) slot() int { return 63 }

// recTypes are recRef of every marker, by slot.
var recTypes = [...]func() (single, repeated reflect.Type){
	recTypesOf[r0],
	recTypesOf[r1],
	recTypesOf[r2],
	recTypesOf[r3],
	recTypesOf[r4],
	recTypesOf[r5],
	recTypesOf[r6],
	recTypesOf[r7],
	recTypesOf[r8],
	recTypesOf[r9],
	recTypesOf[r10],
	recTypesOf[r11],
	recTypesOf[r12],
	recTypesOf[r13],
	recTypesOf[r14],
	recTypesOf[r15],
	recTypesOf[r16],
	recTypesOf[r17],
	recTypesOf[r18],
	recTypesOf[r19],
	recTypesOf[r20],
	recTypesOf[r21],
	recTypesOf[r22],
	recTypesOf[r23],
	recTypesOf[r24],
	recTypesOf[r25],
	recTypesOf[r26],
	recTypesOf[r27],
	recTypesOf[r28],
	recTypesOf[r29],
	recTypesOf[r30],
	recTypesOf[r31],
	recTypesOf[r32],
	recTypesOf[r33],
	recTypesOf[r34],
	recTypesOf[r35],
	recTypesOf[r36],
	recTypesOf[r37],
	recTypesOf[r38],
	recTypesOf[r39],
	recTypesOf[r40],
	recTypesOf[r41],
	recTypesOf[r42],
	recTypesOf[r43],
	recTypesOf[r44],
	recTypesOf[r45],
	recTypesOf[r46],
	recTypesOf[r47],
	recTypesOf[r48],
	recTypesOf[r49],
	recTypesOf[r50],
	recTypesOf[r51],
	recTypesOf[r52],
	recTypesOf[r53],
	recTypesOf[r54],
	recTypesOf[r55],
	recTypesOf[r56],
	recTypesOf[r57],
	recTypesOf[r58],
	recTypesOf[r59],
	recTypesOf[r60],
	recTypesOf[r61],
	recTypesOf[r62],
	recTypesOf[r63],
}
